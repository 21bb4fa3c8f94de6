//! Where a TCP bridge listens and the address its extension dials — two different things once
//! the agent runs somewhere our loopback is not (another network namespace, a container,
//! another host): the library binds `listen`, the extension dials `advertise`, which may be a
//! forwarded port or a name only the far side resolves.

use std::net::{IpAddr, SocketAddr};

use crate::error::{Error, Result};

/// The bind address when only `bridge_transport:"tcp"` is asked for: loopback, any port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// What the extension dials: a host (a name or an IP literal, never resolved here) and a
/// port. Port 0 stands for the port the bridge bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advertised {
    pub host: String,
    pub port: u16,
}

impl Advertised {
    /// `host:port`, an IPv6 literal in brackets.
    pub fn display(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The TCP bridge's addresses as asked for (ports may be 0 until it binds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpAddresses {
    pub listen: SocketAddr,
    /// None: the extension dials the bound address.
    pub advertise: Option<Advertised>,
}

impl TcpAddresses {
    /// Checks `bridge_listen` and `bridge_advertise` (either may be absent).
    pub fn parse(listen: Option<&str>, advertise: Option<&str>) -> Result<TcpAddresses> {
        let listen = parse_listen(listen.unwrap_or(DEFAULT_LISTEN))?;
        let advertise = advertise.map(parse_advertise).transpose()?;
        if advertise.is_none() && listen.ip().is_unspecified() {
            // 0.0.0.0 / :: is where to bind, not an address anyone can dial.
            return Err(Error::invalid(format!(
                "option \"bridge_listen\" is {listen}, every interface: give \"bridge_advertise\", the \"host:port\" the agent dials to reach it"
            )));
        }
        Ok(TcpAddresses { listen, advertise })
    }

    /// What the extension dials once the bridge is bound to `bound`.
    pub fn dialled(&self, bound: SocketAddr) -> Advertised {
        match &self.advertise {
            Some(a) => Advertised { host: a.host.clone(), port: if a.port == 0 { bound.port() } else { a.port } },
            None => Advertised { host: bound.ip().to_string(), port: bound.port() },
        }
    }
}

fn parse_listen(text: &str) -> Result<SocketAddr> {
    text.parse::<SocketAddr>().map_err(|_| {
        Error::invalid(format!(
            "option \"bridge_listen\" must be an IP address and port to bind, like \"10.0.0.1:0\" or \"[::1]:0\" \
             (port 0: any free port; a host name is not resolved), not {text:?}"
        ))
    })
}

fn parse_advertise(text: &str) -> Result<Advertised> {
    let wrong = |why: &str| {
        Error::invalid(format!("option \"bridge_advertise\" must be the \"host:port\" the agent dials (port 0: the bound port), not {text:?}: {why}"))
    };
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (ip, port) = rest.split_once("]:").ok_or_else(|| wrong("an IPv6 address in brackets needs \"]:port\" after it"))?;
        ip.parse::<std::net::Ipv6Addr>().map_err(|_| wrong("not an IPv6 address in the brackets"))?;
        (ip, port)
    } else {
        let (host, port) = text.rsplit_once(':').ok_or_else(|| wrong("no port"))?;
        if host.contains(':') {
            return Err(wrong("put an IPv6 address in brackets, like \"[fd00::1]:7000\""));
        }
        if !is_host_name(host) {
            return Err(wrong("the host is neither an IP address nor a host name"));
        }
        (host, port)
    };
    let port = port.parse::<u16>().map_err(|_| wrong("the port is not a number from 0 to 65535"))?;
    if host.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified()) {
        return Err(wrong("an unspecified address (0.0.0.0, ::) cannot be dialled"));
    }
    Ok(Advertised { host: host.to_string(), port })
}

/// A DNS name or an IPv4 literal: dot-separated labels of letters, digits and inner hyphens
/// (underscores too, as some internal names have them).
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(listen: Option<&str>, advertise: Option<&str>) -> TcpAddresses {
        TcpAddresses::parse(listen, advertise).unwrap_or_else(|e| panic!("{listen:?} {advertise:?}: {e}"))
    }

    fn err(listen: Option<&str>, advertise: Option<&str>) -> String {
        TcpAddresses::parse(listen, advertise).unwrap_err().message
    }

    #[test]
    fn defaults_to_loopback_and_dials_what_was_bound() {
        let a = ok(None, None);
        assert_eq!(a.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!(a.dialled("127.0.0.1:4100".parse().unwrap()).display(), "127.0.0.1:4100");
        let v6 = ok(Some("[::1]:0"), None);
        assert_eq!(v6.dialled("[::1]:4100".parse().unwrap()).display(), "[::1]:4100");
    }

    #[test]
    fn advertised_port_zero_is_the_bound_port() {
        let a = ok(Some("10.1.2.3:0"), Some("agent-gw.internal:0"));
        assert_eq!(a.dialled("10.1.2.3:5000".parse().unwrap()), Advertised { host: "agent-gw.internal".into(), port: 5000 });
        let fixed = ok(None, Some("[fd00::7]:9000"));
        assert_eq!(fixed.dialled("127.0.0.1:5000".parse().unwrap()).display(), "[fd00::7]:9000");
    }

    #[test]
    fn every_interface_needs_an_advertised_address() {
        assert!(err(Some("0.0.0.0:0"), None).contains("give \"bridge_advertise\""));
        assert!(err(Some("[::]:7000"), None).contains("give \"bridge_advertise\""));
        assert_eq!(ok(Some("0.0.0.0:7000"), Some("host.example:7000")).listen.port(), 7000);
    }

    #[test]
    fn bad_addresses_say_what_is_wrong() {
        for (listen, needle) in [("localhost:0", "a host name is not resolved"), ("10.0.0.1", "IP address and port"), ("10.0.0.1:70000", "IP address and port"), ("", "IP address and port")] {
            assert!(err(Some(listen), None).contains(needle), "{listen:?}: {}", err(Some(listen), None));
        }
        for (advertise, needle) in [
            ("hostonly", "no port"),
            ("fd00::1:7000", "in brackets"),
            ("[fd00::1]7000", "\"]:port\""),
            ("[nope]:7000", "not an IPv6 address"),
            ("host:port", "0 to 65535"),
            ("host:-1", "0 to 65535"),
            (":7000", "neither an IP address nor a host name"),
            ("bad host:7000", "neither an IP address nor a host name"),
            ("-lead.example:7000", "neither an IP address nor a host name"),
            ("a..b:7000", "neither an IP address nor a host name"),
            ("0.0.0.0:7000", "cannot be dialled"),
            ("[::]:7000", "cannot be dialled"),
        ] {
            let message = err(None, Some(advertise));
            assert!(message.contains("bridge_advertise") && message.contains(needle), "{advertise:?}: {message}");
        }
    }
}
