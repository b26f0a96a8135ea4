//! `rtc-agent doctor` on the real binary: a database not yet migrated, a
//! master key readable by others and a provider that cannot be reached
//! each fail with a line that says what to do; fixed, every line is ok.

use std::process::Output;
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, TestDatabase};

use crate::harness::binary;

async fn rtc(args: &[&str], env: &[(&str, String)]) -> anyhow::Result<Output> {
    let run = tokio::process::Command::new(binary())
        .args(args)
        .env_remove("RTC_ALLOW_PRIVATE_NETWORK")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .kill_on_drop(true)
        .output();
    Ok(tokio::time::timeout(Duration::from_secs(60), run).await??)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn line<'a>(out: &'a str, what: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no `{what}` line in:\n{out}"))
}

#[tokio::test]
async fn doctor_checks_the_whole_configuration() -> anyhow::Result<()> {
    let db = TestDatabase::new(Engine::Sqlite).await?.unwrap();
    let data = tempfile::tempdir()?;
    let mock = MockLlm::start((0..4).map(|_| MockReply::text("ok")).collect()).await?;
    let config = data.path().join("rtc-agent.toml");
    let closed = rtc_testkit::ClosedPort::new()?;
    let dead = format!("http://127.0.0.1:{}/v1", closed.port);
    std::fs::write(
        &config,
        format!(
            "[providers.down]\nbase_url = \"{dead}\"\napi_key = \"sk-down-secret-1\"\nmodel = \"m\"\n"
        ),
    )?;
    let mut env = vec![
        ("DATABASE_URL", db.url.clone()),
        ("RTC_DATA_DIR", data.path().display().to_string()),
        ("RTC_LLM_BASE_URL", mock.base_url.clone()),
        ("RTC_LLM_MODEL", "mock-model".to_owned()),
        ("RTC_CONFIG", config.display().to_string()),
    ];
    let first = rtc(&["doctor"], &env).await?;
    let out = text(&first);
    assert_eq!(first.status.code(), Some(1), "{out}");
    assert!(
        line(&out, "database").starts_with("FAIL") && out.contains("rtc-agent migrate"),
        "{out}"
    );
    assert!(line(&out, "master key").starts_with("warn"), "{out}");
    assert!(
        line(&out, "provider default").starts_with("ok") && out.contains("answers with mock-model"),
        "{out}"
    );
    assert!(line(&out, "provider down").starts_with("FAIL"), "{out}");
    assert!(line(&out, "outbound guard").starts_with("ok"), "{out}");
    assert!(!out.contains("sk-down-secret-1"), "{out}");
    assert!(
        !data.path().join("master.key").exists(),
        "doctor changes nothing"
    );

    let migrated = rtc(&["migrate"], &env).await?;
    assert!(migrated.status.success(), "{}", text(&migrated));
    let key = data.path().join("master.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644))?;
        let loose = text(&rtc(&["doctor"], &env).await?);
        assert!(
            line(&loose, "master key").starts_with("FAIL") && loose.contains("chmod 600"),
            "{loose}"
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::write(&config, "")?;
    env.push(("RTC_ALLOW_PRIVATE_NETWORK", "1".to_owned()));
    let good = rtc(&["doctor"], &env).await?;
    let out = text(&good);
    assert!(good.status.success(), "{out}");
    assert!(
        line(&out, "database").starts_with("ok") && out.contains("current"),
        "{out}"
    );
    assert!(line(&out, "master key").starts_with("ok"), "{out}");
    assert!(line(&out, "outbound guard").starts_with("warn"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    Ok(())
}

/// A new user's first contact: `serve --help` names the provider settings,
/// and a server started without a usable provider says what to set.
#[tokio::test]
async fn serve_names_the_provider_settings() -> anyhow::Result<()> {
    let help = rtc(&["serve", "--help"], &[]).await?;
    let help = text(&help);
    for name in [
        "RTC_LLM_BASE_URL",
        "RTC_LLM_API_KEY",
        "RTC_LLM_MODEL",
        "RTC_SMALL_MODEL",
    ] {
        assert!(help.contains(name), "{name} in\n{help}");
    }
    let env = std::collections::HashMap::from([(
        "RTC_LLM_BASE_URL".to_owned(),
        "https://api.openai.com/v1".to_owned(),
    )]);
    let Some(srv) = crate::harness::start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let log = srv.process.log();
        if log.contains("the model provider cannot work") {
            assert!(log.contains("set RTC_LLM_API_KEY"), "{log}");
            break;
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "no warning in\n{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
