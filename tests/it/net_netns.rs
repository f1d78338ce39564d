//! The "remote" path over a real second network stack: a network namespace joined to this one by
//! a veth pair (10.213.N.0/30, made by this test and deleted at its end, also on failure).
//! `osgauge serve --listen <namespace address> --token-file F` runs inside the namespace and
//! `osgauge micro net … --peer <namespace address>` outside. Only the namespace's own address is
//! ever a target. Needs root and `ip`; ignored with the reason where it cannot run.

#[cfg(target_os = "linux")]
mod linux {
    use crate::common;
    use std::net::{SocketAddr, TcpStream};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use osgauge::testing::not_run;
    use serde_json::Value;

    const NAME: &str = "net_netns::serve_in_a_namespace_client_outside";

    fn ip(args: &[&str]) -> Result<(), String> {
        let o = Command::new("ip")
            .args(args)
            .output()
            .map_err(|e| format!("ip: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
    }

    /// Deletes the namespace, the host's veth end and the server process on every exit path.
    struct Netns {
        ns: String,
        veth: String,
        server: Option<Child>,
    }

    impl Drop for Netns {
        fn drop(&mut self) {
            if let Some(mut c) = self.server.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            let _ = ip(&["link", "del", &self.veth]);
            let _ = ip(&["netns", "del", &self.ns]);
        }
    }

    fn serve_in_a_namespace_client_outside() {
        // SAFETY: geteuid takes no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return not_run(NAME, "needs root to create a network namespace");
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return not_run(NAME, "the `ip` command is missing");
        }
        let id = std::process::id();
        let n = id % 250 + 1;
        let mut env = Netns {
            ns: format!("og-net-{id}"),
            veth: format!("ogh{}", id % 100_000),
            server: None,
        };
        let peer_veth = format!("ogn{}", id % 100_000);
        let host_ip = format!("10.213.{n}.1");
        let ns_ip = format!("10.213.{n}.2");
        if let Err(e) = ip(&["netns", "add", &env.ns]) {
            return not_run(NAME, &format!("cannot create a namespace: {e}"));
        }
        let setup = (|| {
            ip(&[
                "link", "add", &env.veth, "type", "veth", "peer", "name", &peer_veth,
            ])?;
            ip(&["link", "set", &peer_veth, "netns", &env.ns])?;
            ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &env.veth])?;
            ip(&["link", "set", &env.veth, "up"])?;
            ip(&[
                "-n",
                &env.ns,
                "addr",
                "add",
                &format!("{ns_ip}/30"),
                "dev",
                &peer_veth,
            ])?;
            ip(&["-n", &env.ns, "link", "set", &peer_veth, "up"])?;
            ip(&["-n", &env.ns, "link", "set", "lo", "up"])
        })();
        if let Err(e) = setup {
            return not_run(NAME, &format!("cannot set up the veth pair: {e}"));
        }
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "netns-test-token-0123456789\n").unwrap();
        let bin = env!("CARGO_BIN_EXE_osgauge");
        let listen = format!("{ns_ip}:7700");
        env.server = Some(
            common::confine(&mut Command::new("ip"))
                .args(["netns", "exec", &env.ns, bin, "serve", "--listen", &listen])
                .arg("--token-file")
                .arg(&token)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start osgauge serve in the namespace"),
        );
        let addr: SocketAddr = listen.parse().unwrap();
        let t0 = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "osgauge serve did not start listening in the namespace"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = dir.path().join("net.json");
        let o = Command::new(bin)
            .args([
                "micro",
                "net/tcp_rtt_64b",
                "net/tcp_stream",
                "net/udp_stream",
                "--peer",
                &listen,
                "--runs",
                "2",
                "--warmup",
                "0",
                "--run-time",
                "100ms",
                "--rate",
                "100Mbit",
                "--no-store",
                "--quiet",
                "--export-json",
            ])
            .arg(&out)
            .arg("--token-file")
            .arg(&token)
            .env("OSGAUGE_STORE", dir.path().join("store.db"))
            .env("OSGAUGE_CACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "client failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rec: Value = common::read_json(&out);
        let benches = rec["benchmarks"].as_array().unwrap();
        assert_eq!(benches.len(), 3);
        let metric = |id: &str, m: &str| -> f64 {
            let b = benches.iter().find(|b| b["id"] == id).unwrap();
            assert!(b["error"].is_null(), "{id}: {}", b["error"]);
            let peer = b["params"]["peer"].as_str().unwrap_or_default().to_string();
            assert!(peer.contains(&ns_ip), "{id} ran against {peer}");
            assert_eq!(b["params"]["same_host"], Value::Bool(false));
            b["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == m)
                .and_then(|x| x["summary"]["center"].as_f64())
                .unwrap_or_else(|| panic!("{id}: no {m}"))
        };
        assert!(metric("net/tcp_rtt_64b", "rtt_p50_us") > 0.0);
        assert!(metric("net/tcp_stream", "throughput_gbit_s") > 0.0);
        // Service demand: a value, or not measured because the machine was busy (said so).
        let demand = benches
            .iter()
            .find(|b| b["id"] == "net/tcp_stream")
            .and_then(|b| b["metrics"].as_array())
            .and_then(|m| {
                m.iter()
                    .find(|x| x["name"] == "rx_service_demand_us_per_kib")
            })
            .cloned()
            .unwrap();
        match demand["summary"]["center"].as_f64() {
            Some(v) => assert!(v >= 0.0),
            None => {
                let why = demand["not_measured"].as_str().unwrap_or_default();
                assert!(osgauge::cpucost::is_not_usable_reason(why), "{demand}");
                eprintln!("service demand not measured here: {why}");
            }
        }
        assert!(metric("net/udp_stream", "loss_pct") >= 0.0);
        assert!(metric("net/udp_stream", "jitter_p99_us") >= 0.0);
        // The token is required from outside: without it the client is refused clearly.
        let o = Command::new(bin)
            .args(["micro", "net/tcp_rtt_64b", "--peer", &listen, "--runs", "1"])
            .args([
                "--warmup",
                "0",
                "--no-store",
                "--quiet",
                "--run-time",
                "10ms",
            ])
            .env("OSGAUGE_STORE", dir.path().join("store.db"))
            .env("OSGAUGE_CACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        assert!(text.contains("requires a token"), "{text}");
        // The server logged the sessions.
        let mut server = env.server.take().unwrap();
        let _ = server.kill();
        let so = server.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&so.stdout);
        assert!(log.contains("authenticated; tests:"), "{log}");
    }
    crate::register!(
        serve_in_a_namespace_client_outside
            .root()
            .executable(&["ip"])
    );
}

#[cfg(not(target_os = "linux"))]
fn serve_in_a_namespace_client_outside() {}
#[cfg(not(target_os = "linux"))]
crate::register!(serve_in_a_namespace_client_outside.ignore("network namespaces are Linux only"));
