//! The `osgauge serve` control protocol's frame reader and message decoder on arbitrary bytes:
//! an error or a message, never a panic, never a body over the frame limit; and the UDP test
//! datagram header parser.
#![no_main]

use libfuzzer_sys::fuzz_target;
use osgauge::serve::{data::parse_datagram, proto};

fuzz_target!(|data: &[u8]| {
    let mut r = std::io::Cursor::new(data);
    while proto::read_msg(&mut r).is_ok() {}
    let _ = proto::decode(data);
    let _ = parse_datagram(data);
});
