use super::*;

#[test]
fn classifies_addresses() {
    let blocked = [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "255.255.255.255",
        "224.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::a00:1",
    ];
    for ip in blocked {
        assert!(!is_public(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "172.32.0.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
    ] {
        assert!(is_public(ip.parse().unwrap()), "{ip}");
    }
}

#[test]
fn url_literals_follow_policy() {
    let u = |s: &str| url::Url::parse(s).unwrap();
    assert_eq!(
        check_url(&u("http://127.0.0.1:8080/x"), AddressPolicy::PublicOnly),
        Err(BlockedUrl::Address("127.0.0.1".parse().unwrap()))
    );
    assert!(check_url(&u("http://[::1]/"), AddressPolicy::PublicOnly).is_err());
    assert!(check_url(&u("http://127.0.0.1/"), AddressPolicy::AllowPrivate).is_ok());
    assert!(check_url(&u("https://example.com/"), AddressPolicy::PublicOnly).is_ok());
    assert_eq!(
        check_url(&u("file:///etc/passwd"), AddressPolicy::AllowPrivate),
        Err(BlockedUrl::Scheme)
    );
}

#[tokio::test]
async fn resolved_loopback_names_are_refused() {
    let client = guarded_client(AddressPolicy::PublicOnly, Duration::from_secs(5)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let err = client
        .get(format!("http://localhost:{port}/"))
        .send()
        .await
        .unwrap_err();
    let text = format!("{err:?}");
    assert!(text.contains("not allowed"), "{text}");
}
