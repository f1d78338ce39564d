//! Sockets for the network suite and `osgauge serve`, through `socket2` over `std::net` (plain
//! blocking calls, so the measured path is the OS's own), and the TIME_WAIT count per OS.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, Type};

/// Connect with a time bound; TCP_NODELAY set (read back: an error if it did not hold).
pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    set_nodelay(&s)?;
    Ok(s)
}

/// Connect, ending with `bound` (its deadline, the first Ctrl-C/SIGTERM); TCP_NODELAY set. Unix:
/// a non-blocking connect waited on with poll(2) in slices. Elsewhere: a connect with the time
/// left before the deadline (10 s when it has none).
pub fn connect_bounded(addr: SocketAddr, bound: &super::wait::Bound) -> io::Result<TcpStream> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let s = tcp_socket(&addr)?;
        s.set_nonblocking(true)?;
        match s.connect(&addr.into()) {
            Ok(()) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EINPROGRESS)
                    || e.kind() == io::ErrorKind::WouldBlock =>
            {
                bound.wait_fd(s.as_raw_fd(), super::wait::Dir::Write)?;
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
        s.set_nonblocking(false)?;
        let s: TcpStream = s.into();
        set_nodelay(&s)?;
        Ok(s)
    }
    #[cfg(not(unix))]
    {
        bound.check()?;
        let left = bound.deadline().map_or(Duration::from_secs(10), |d| {
            d.saturating_duration_since(std::time::Instant::now())
        });
        connect(addr, left.max(Duration::from_millis(1)))
    }
}

pub fn set_nodelay(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    if !s.nodelay()? {
        return Err(io::Error::other("TCP_NODELAY did not hold"));
    }
    Ok(())
}

/// A new TCP socket for `addr`'s family (not connected), for timing setup alone.
pub fn tcp_socket(addr: &SocketAddr) -> io::Result<Socket> {
    Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )
}

/// A listener on `addr` (SO_REUSEADDR on Unix so a restarted server can bind at once).
pub fn listen(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let s = tcp_socket(&addr)?;
    #[cfg(unix)]
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    Ok(s.into())
}

/// Send and receive buffer sizes as the OS reports them (bytes).
pub fn tcp_buffers(s: &TcpStream) -> io::Result<(u64, u64)> {
    let r = SockRef::from(s);
    Ok((r.send_buffer_size()? as u64, r.recv_buffer_size()? as u64))
}

pub fn udp_buffers(s: &UdpSocket) -> io::Result<(u64, u64)> {
    let r = SockRef::from(s);
    Ok((r.send_buffer_size()? as u64, r.recv_buffer_size()? as u64))
}

/// Ask for a receive buffer of `bytes` on a UDP socket; returns what the OS reports afterwards.
pub fn set_udp_recv_buffer(s: &UdpSocket, bytes: usize) -> io::Result<u64> {
    let r = SockRef::from(s);
    r.set_recv_buffer_size(bytes)?;
    Ok(r.recv_buffer_size()? as u64)
}

/// Close abortively (SO_LINGER {1, 0}: RST, no TIME_WAIT).
pub fn set_abortive_close(s: &TcpStream) -> io::Result<()> {
    SockRef::from(s).set_linger(Some(Duration::ZERO))
}

/// Sockets in TIME_WAIT on this machine (all TCP, IPv4 and IPv6).
#[cfg(target_os = "linux")]
pub fn time_wait_count() -> io::Result<u64> {
    let mut n = 0;
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        match std::fs::read_to_string(f) {
            Ok(t) => n += count_time_wait(&t),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(not(target_os = "linux"))]
pub fn time_wait_count() -> io::Result<u64> {
    Err(super::unsupported(
        "counting TIME_WAIT sockets is implemented for Linux (/proc/net/tcp) only",
    ))
}

/// How many local ports connect() may pick from (Linux: net.ipv4.ip_local_port_range; elsewhere
/// the IANA dynamic range 49152–65535, which Windows and macOS use by default).
pub fn ephemeral_ports() -> u64 {
    #[cfg(target_os = "linux")]
    if let Ok(t) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        && let Some(n) = ports_in_range(&t)
    {
        return n;
    }
    65535 - 49152 + 1
}

/// The size of a "low high" port range as /proc prints it.
pub fn ports_in_range(text: &str) -> Option<u64> {
    let mut it = text.split_whitespace().map(|x| x.parse::<u64>());
    match (it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi))) if hi >= lo => Some(hi - lo + 1),
        _ => None,
    }
}

/// Sockets in TIME_WAIT whose remote end is `to` (Linux: /proc/net/tcp and tcp6): the only ones
/// that can hold a local port a new connection to `to` needs — connect() picks a local port per
/// destination, so TIME_WAIT sockets towards other addresses or ports do not stand in its way.
#[cfg(target_os = "linux")]
pub fn time_wait_to(to: std::net::SocketAddr) -> io::Result<u64> {
    let mut n = 0;
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        match std::fs::read_to_string(f) {
            Ok(t) => n += count_time_wait_to(&t, to),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(not(target_os = "linux"))]
pub fn time_wait_to(_to: std::net::SocketAddr) -> io::Result<u64> {
    Err(super::unsupported(
        "counting TIME_WAIT sockets is implemented for Linux (/proc/net/tcp) only",
    ))
}

/// An address of /proc/net/tcp ("0100007F:1F90"; IPv6 as four 32-bit words): each word is the
/// address's bytes in network order read as a native integer, the port is plain hex.
pub fn parse_proc_addr(s: &str) -> Option<std::net::SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Option<Vec<[u8; 4]>> = (0..ip.len() / 8)
        .map(|k| {
            ip.get(k * 8..k * 8 + 8)
                .and_then(|w| u32::from_str_radix(w, 16).ok())
                .map(u32::to_ne_bytes)
        })
        .collect();
    let bytes: Vec<u8> = words?.concat();
    let ip: std::net::IpAddr = match bytes.len() {
        4 => std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).into(),
        16 => {
            let a: [u8; 16] = bytes.try_into().ok()?;
            std::net::Ipv6Addr::from(a).into()
        }
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, port))
}

/// Count lines of /proc/net/tcp in TIME_WAIT whose remote address is `to` (an IPv4 address
/// matches its IPv4-mapped IPv6 form too).
pub fn count_time_wait_to(table: &str, to: std::net::SocketAddr) -> u64 {
    let same = |a: std::net::SocketAddr| {
        let canon = |ip: std::net::IpAddr| match ip {
            std::net::IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
            v4 => v4,
        };
        a.port() == to.port() && canon(a.ip()) == canon(to.ip())
    };
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(3) == Some(&"06") && f.get(2).and_then(|a| parse_proc_addr(a)).is_some_and(same)
        })
        .count() as u64
}

/// Count lines of /proc/net/tcp whose state column is 06 (TIME_WAIT).
pub fn count_time_wait(table: &str) -> u64 {
    table
        .lines()
        .skip(1)
        .filter(|l| l.split_whitespace().nth(3) == Some("06"))
        .count() as u64
}

/// Whether `ip` is a loopback address.
pub fn is_loopback(ip: std::net::IpAddr) -> bool {
    ip.is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_wait_lines_are_counted_by_state() {
        let t = "  sl  local_address rem_address   st tx_queue\n\
                 0: 0100007F:1F90 0100007F:C350 06 00000000:00000000\n\
                 1: 0100007F:1F90 0100007F:C351 01 00000000:00000000\n\
                 2: 0100007F:1F90 0100007F:C352 06 00000000:00000000\n";
        assert_eq!(count_time_wait(t), 2);
        // /proc prints each address word as a native integer: these lines are a little-endian
        // machine's.
        if cfg!(target_endian = "big") {
            return;
        }
        // Only the first is in TIME_WAIT towards 127.0.0.1:50000 (0xC350).
        let to: std::net::SocketAddr = "127.0.0.1:50000".parse().unwrap();
        assert_eq!(count_time_wait_to(t, to), 1);
        assert_eq!(count_time_wait_to(t, "127.0.0.2:50000".parse().unwrap()), 0);
        let v6 = "  sl  local_address rem_address st\n\
                  0: 00000000000000000000000001000000:1F90 0000000000000000FFFF00000100007F:C350 06\n";
        assert_eq!(count_time_wait_to(v6, to), 1);
        assert_eq!(
            parse_proc_addr("00000000000000000000000001000000:0016"),
            Some("[::1]:22".parse().unwrap())
        );
    }

    #[test]
    fn port_ranges_are_sized() {
        assert_eq!(ports_in_range("32768\t60999\n"), Some(28232));
        assert_eq!(ports_in_range("100 99"), None);
        assert_eq!(ports_in_range("x"), None);
        assert!(ephemeral_ports() > 0);
    }

    #[test]
    fn buffers_read_back() {
        let l = listen("127.0.0.1:0".parse().unwrap(), 4).unwrap();
        let c = connect(l.local_addr().unwrap(), Duration::from_secs(2)).unwrap();
        let (snd, rcv) = tcp_buffers(&c).unwrap();
        assert!(snd > 0 && rcv > 0);
    }
}
