use super::*;

/// Every special-purpose block, with an address inside it, and public
/// neighbours that must stay reachable.
#[test]
fn classifies_addresses() {
    let cases: &[(&str, bool)] = &[
        // IPv4
        ("8.8.8.8", true),
        ("1.1.1.1", true),
        ("172.32.0.1", true),
        ("100.128.0.1", true),
        ("198.20.0.1", true),
        ("0.0.0.0", false),
        ("0.1.2.3", false),
        ("10.1.2.3", false),
        ("100.64.0.1", false),
        ("100.127.255.255", false),
        ("127.0.0.1", false),
        ("127.255.0.9", false),
        ("169.254.169.254", false),
        ("172.16.0.1", false),
        ("172.31.255.255", false),
        ("192.0.0.170", false),
        ("192.0.2.1", false),
        ("192.88.99.1", false),
        ("192.168.1.1", false),
        ("198.18.0.1", false),
        ("198.19.255.255", false),
        ("198.51.100.7", false),
        ("203.0.113.7", false),
        ("224.0.0.1", false),
        ("239.255.255.250", false),
        ("240.0.0.1", false),
        ("255.255.255.255", false),
        // IPv6
        ("2606:4700:4700::1111", true),
        ("2001:4860:4860::8888", true),
        ("2a00:1450:4001::200e", true),
        ("::", false),
        ("::1", false),
        ("::127.0.0.1", false),
        ("::10.0.0.1", false),
        ("::8.8.8.8", false),
        ("::ffff:127.0.0.1", false),
        ("::ffff:10.0.0.1", false),
        ("::ffff:169.254.169.254", false),
        ("::ffff:8.8.8.8", true),
        ("::ffff:0:127.0.0.1", false),
        ("64:ff9b::a00:1", false),
        ("64:ff9b::127.0.0.1", false),
        ("64:ff9b::169.254.169.254", false),
        ("64:ff9b::8.8.8.8", true),
        ("64:ff9b:1::8.8.8.8", false),
        ("100::1", false),
        ("2001::1", false),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
        ("2001:db8::1", false),
        ("2002:7f00:1::1", false),
        ("2002:a00:1::1", false),
        ("2002:c0a8:101::1", false),
        ("2002:a9fe:a9fe::1", false),
        ("2002:808:808::1", true),
        ("3fff::1", false),
        ("5f00::1", false),
        ("fc00::1", false),
        ("fd00:ec2::254", false),
        ("fe80::1", false),
        ("febf::1", false),
        ("fec0::1", false),
        ("feff::1", false),
        ("ff02::1", false),
        ("ff0e::1", false),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(ip, public)| is_public(ip.parse().unwrap()) != *public)
        .map(|(ip, public)| format!("{ip}: expected public = {public}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn url_literals_follow_policy() {
    let u = |s: &str| url::Url::parse(s).unwrap();
    assert_eq!(
        check_url(&u("http://127.0.0.1:8080/x"), AddressPolicy::PublicOnly),
        Err(BlockedUrl::Address("127.0.0.1".parse().unwrap()))
    );
    for blocked in [
        "http://[::1]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[2002:7f00:1::1]/",
        "http://[fec0::1]/",
        "http://0.0.0.0/",
        "http://100.64.1.1/",
    ] {
        assert!(
            check_url(&u(blocked), AddressPolicy::PublicOnly).is_err(),
            "{blocked}"
        );
    }
    assert!(check_url(&u("http://127.0.0.1/"), AddressPolicy::AllowPrivate).is_ok());
    assert!(check_url(&u("https://example.com/"), AddressPolicy::PublicOnly).is_ok());
    assert_eq!(
        check_url(&u("file:///etc/passwd"), AddressPolicy::AllowPrivate),
        Err(BlockedUrl::Scheme)
    );
}

#[test]
fn urls_at_save_refuse_local_names_too() {
    let u = |s: &str| url::Url::parse(s).unwrap();
    for blocked in [
        "http://localhost:3000/mcp",
        "http://LOCALHOST./mcp",
        "http://api.localhost/mcp",
        "http://127.0.0.1/mcp",
        "http://2130706433/mcp",
    ] {
        assert!(
            check_url_at_save(&u(blocked), AddressPolicy::PublicOnly).is_err(),
            "{blocked}"
        );
        assert!(
            check_url_at_save(&u(blocked), AddressPolicy::AllowPrivate).is_ok(),
            "{blocked}"
        );
    }
    assert_eq!(
        check_url_at_save(&u("http://localhost/"), AddressPolicy::PublicOnly),
        Err(BlockedUrl::LocalName("localhost".into()))
    );
    for allowed in ["https://mcp.example.com/mcp", "https://notlocalhost.com/"] {
        assert!(
            check_url_at_save(&u(allowed), AddressPolicy::PublicOnly).is_ok(),
            "{allowed}"
        );
    }
}

/// A refused name is reported by host, without the address it resolved to.
#[tokio::test]
async fn resolved_loopback_names_are_refused_without_showing_the_address() {
    let client = guarded_client(AddressPolicy::PublicOnly, Duration::from_secs(5)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let err = client
        .get(format!("http://localhost:{port}/"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        blocked_host(&err),
        Some(&BlockedHost {
            host: "localhost".into()
        }),
        "{err:?}"
    );
    let mut text = format!("{err:?}");
    let mut source: Option<&dyn std::error::Error> = Some(&err);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    assert!(
        text.contains("the address of host localhost is private, loopback or reserved"),
        "{text}"
    );
    for internal in ["127.0.0.1", "::1"] {
        assert!(!text.contains(internal), "`{internal}` shown: {text}");
    }
}

/// Set by [`guarded_clients_ignore_proxy_variables`] for its child process.
const PROXY_CHILD: &str = "RTC_NET_GUARD_PROXY_CHILD";

/// The variables live in a child process (this test binary, running only
/// [`proxy_child`]), as the environment of this one is shared by all tests.
#[test]
fn guarded_clients_ignore_proxy_variables() {
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    proxy.set_nonblocking(true).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "net_guard::tests::proxy_child", "--nocapture"])
        .env(PROXY_CHILD, "1")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env("HTTP_PROXY", &proxy_url)
        .env("http_proxy", &proxy_url)
        .env("HTTPS_PROXY", &proxy_url)
        .env("ALL_PROXY", &proxy_url)
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(log.contains("1 passed"), "the child ran the request: {log}");
    assert!(
        proxy.accept().is_err(),
        "the proxy was contacted; child output: {log}"
    );
}

/// Runs in the child of [`guarded_clients_ignore_proxy_variables`]: a
/// request to a local server reaches it directly.
#[tokio::test]
async fn proxy_child() {
    if std::env::var_os(PROXY_CHILD).is_none() {
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = stream.read(&mut buf).await.unwrap();
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            .await
            .unwrap();
    });
    let client = guarded_client(AddressPolicy::AllowPrivate, Duration::from_secs(5)).unwrap();
    let resp = client.get(format!("http://{addr}/")).send().await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "ok");
    server.await.unwrap();
}

/// A save warns about what calls would be refused: an address, a name of
/// this machine, and a name whose addresses are all private; it stays
/// quiet for public and allowed targets and for names it cannot resolve.
#[tokio::test]
async fn refusals_at_save_name_the_setting() {
    let url = |s: &str| url::Url::parse(s).unwrap();
    let warning = refusal_at_save(&url("http://127.0.0.1:9/x"), AddressPolicy::PublicOnly)
        .await
        .expect("a loopback address is refused");
    assert!(warning.contains("RTC_OUTBOUND_ALLOW"), "{warning}");
    assert!(
        refusal_at_save(&url("http://localhost:9/x"), AddressPolicy::PublicOnly)
            .await
            .is_some()
    );
    // A name of this machine outside `*.localhost` is judged by the
    // addresses it resolves to (here, through /etc/hosts).
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let name = name.trim();
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((name, 80)).await.unwrap().collect();
    let private = resolved.iter().all(|a| !is_public(a.ip()));
    let warning =
        refusal_at_save(&url(&format!("http://{name}/x")), AddressPolicy::PublicOnly).await;
    assert_eq!(
        warning.is_some(),
        private,
        "{name} resolves to {resolved:?}: {warning:?}"
    );
    if let Some(w) = warning {
        assert!(w.contains(&format!("host {name} ")), "{w}");
        assert!(
            resolved.iter().all(|a| !w.contains(&a.ip().to_string())),
            "the address stays hidden: {w}"
        );
    }
    assert_eq!(
        refusal_at_save(&url("http://93.184.215.14/x"), AddressPolicy::PublicOnly).await,
        None
    );
    assert_eq!(
        refusal_at_save(
            &url("http://no-such-host.invalid/x"),
            AddressPolicy::PublicOnly
        )
        .await,
        None
    );
    let allow = AddressPolicy::allowing(OutboundAllow::parse("127.0.0.1").unwrap());
    assert_eq!(
        refusal_at_save(&url("http://127.0.0.1:9/x"), allow).await,
        None
    );
    assert_eq!(
        refusal_at_save(&url("http://127.0.0.1:9/x"), AddressPolicy::AllowPrivate).await,
        None
    );
}
