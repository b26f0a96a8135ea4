use super::*;

#[test]
fn tool_names() {
    for ok in ["query_order", "a", "A-b_9", &"x".repeat(64)] {
        assert!(check_tool_name(ok, "name", &|_| false).is_ok(), "{ok}");
    }
    for bad in ["", "has space", "dot.name", "中文", &"x".repeat(65)] {
        assert_eq!(
            check_tool_name(bad, "name", &|_| false).unwrap_err().code,
            "invalid_name",
            "{bad}"
        );
    }
    assert_eq!(
        check_tool_name("askUser", "name", &|n| n == "askUser")
            .unwrap_err()
            .code,
        "reserved_name"
    );
}

#[test]
fn identifiers_and_secrets() {
    assert!(is_identifier("tenant_id") && is_identifier("_x1"));
    assert!(!is_identifier("1x") && !is_identifier("a-b") && !is_identifier(""));
    assert!(check_secret_name("secret__api_key", "name").is_ok());
    for bad in ["api_key", "secret__", "secret__a-b", "SECRET__x"] {
        assert_eq!(
            check_secret_name(bad, "name").unwrap_err().code,
            "invalid_secret_name",
            "{bad}"
        );
    }
}

#[test]
fn header_names() {
    assert!(check_header_name("X-Api-Key", "h").is_ok());
    assert!(check_header_name("Bad Header", "h").is_err());
    assert!(check_header_name("Host", "h").is_err());
}
