use super::*;

#[test]
fn defaults_are_embedded_with_the_mock_model() {
    let cfg = Config::default();
    assert!(matches!(cfg.mode().unwrap(), Mode::Embedded { .. }));
    let models = cfg.effective_models();
    assert_eq!(models.len(), 1);
    assert_eq!(models[0].id, "mock");
    assert!(models[0].default);
}

#[test]
fn thinking_and_cache_settings_are_checked_against_the_provider_and_max_tokens() {
    let model = |provider: ProviderKind, budget: u32, max_tokens: Option<u32>| Config {
        models: vec![ModelConfig {
            id: "claude".into(),
            provider,
            base_url: Some("http://127.0.0.1:1".into()),
            thinking_budget: Some(budget),
            max_tokens,
            ..ModelConfig::mock()
        }],
        ..Config::default()
    };
    let problem = |cfg: Config| cfg.validate().err().map(|e| e.to_string());
    assert_eq!(
        problem(model(ProviderKind::Anthropic, 2048, Some(4096))),
        None
    );
    assert_eq!(problem(model(ProviderKind::Anthropic, 1024, None)), None);
    for (cfg, says) in [
        (
            model(ProviderKind::Openai, 2048, None),
            "for Anthropic models",
        ),
        (model(ProviderKind::Anthropic, 512, None), "at least 1024"),
        (
            model(ProviderKind::Anthropic, 2048, Some(2048)),
            "max_tokens (2048) must be greater",
        ),
        (
            Config {
                models: vec![ModelConfig {
                    provider: ProviderKind::Openai,
                    prompt_cache: Some(true),
                    ..ModelConfig::mock()
                }],
                ..Config::default()
            },
            "prompt_cache is for Anthropic models",
        ),
    ] {
        let said = problem(cfg).expect("refused");
        assert!(said.contains(says), "{said}");
    }
}

#[test]
fn mixed_modes_are_refused() {
    let cfg = Config {
        redis_url: Some(Secret("redis://127.0.0.1".into())),
        ..Config::default()
    };
    assert!(
        cfg.mode()
            .unwrap_err()
            .to_string()
            .contains("shared Postgres")
    );
    let cfg = Config {
        database_url: Some(Secret("postgres://x/y".into())),
        ..Config::default()
    };
    assert!(cfg.mode().is_err());
}

#[test]
fn lark_needs_https_except_on_loopback() {
    let lark = |base_url: &str| Config {
        lark: LarkConfig {
            app_id: "cli_x".into(),
            app_secret: Secret("s".into()),
            base_url: base_url.into(),
            ..LarkConfig::default()
        },
        ..Config::default()
    };
    assert!(lark("https://open.feishu.cn").validate().is_ok());
    assert!(lark("http://127.0.0.1:3000").validate().is_ok());
    assert!(lark("http://[::1]:3000").validate().is_ok());
    assert!(lark("http://localhost:1").validate().is_ok());
    let err = lark("http://open.feishu.cn").validate().unwrap_err();
    assert!(err.to_string().contains("https://"), "{err}");
    let mut no_secret = lark("https://open.feishu.cn");
    no_secret.lark.app_secret = Secret::default();
    assert!(
        no_secret
            .validate()
            .unwrap_err()
            .to_string()
            .contains("app_secret")
    );
    assert!(Config::default().validate().is_ok(), "off by default");
}

#[test]
fn short_admin_tokens_are_refused() {
    let with = |t: &str| Config {
        admin_token: Some(Secret(t.into())),
        ..Config::default()
    };
    let err = with("hunter2").validate().unwrap_err().to_string();
    assert!(err.contains("at least 32 characters"), "{err}");
    assert!(with("3f9c1a7be04d52e8c6a1f0b9d7e4c2a8").validate().is_ok());
}

#[test]
fn example_and_weak_admin_tokens_are_refused() {
    let with = |t: &str| Config {
        admin_token: Some(Secret(t.into())),
        ..Config::default()
    };
    let refused = [
        // deploy/k8s/overlays/example/weft-secrets.env (and the old deploy/.env.example)
        "change-me-admin-token-0123456789abcdef0123456789",
        "CHANGE_ME_please_0123456789abcdefghijklmnopqrstuvwxyz",
        "changeme-7f3a9c1e5b2d8f4a6c0e9b7d5f3a1c8e",
        "my-example-token-7f3a9c1e5b2d8f4a6c0e9b7d5f3a",
        "your-admin-token-goes-here-please-0123456789",
        &"x".repeat(40),
        &"ab".repeat(20),
        "0123456789abcdef0123456789abcdef",
        "aaaabbbbccccddddeeeeffffgggg11112222",
    ];
    for token in refused {
        let err = match with(token).validate() {
            Ok(()) => panic!("{token} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains("WEFT_ADMIN_TOKEN") && err.contains("refused"),
            "{token}: {err}"
        );
    }
    for token in [
        "3f9c1a7be04d52e8c6a1f0b9d7e4c2a8",
        "weft_conformance_admin_token_0123456789",
        "k2Vw9+QxT0b/LmZ3r8YpN1sHdCq4fEaJ",
    ] {
        assert!(with(token).validate().is_ok(), "{token}");
    }
}

#[test]
fn mcp_grants_of_weft_state_are_refused() {
    let with = |path: &str| Config {
        data_dir: Some(PathBuf::from("/var/lib/weft")),
        attachments: AttachmentsConfig {
            store: Some("/srv/weft-files".into()),
            ..AttachmentsConfig::default()
        },
        mcp_servers: vec![McpServerConfig {
            name: "files".into(),
            command: Some("npx".into()),
            paths: vec![McpPathGrant {
                path: path.into(),
                write: false,
            }],
            ..McpServerConfig::default()
        }],
        ..Config::default()
    };
    for (path, what) in [
        ("/var/lib", "data dir"),
        ("/var/lib/weft/skills", "data dir"),
        ("/run", "secrets"),
        ("/run/secrets/weft_database_url", "secrets"),
        ("/srv", "attachment store"),
    ] {
        let err = with(path).validate().unwrap_err().to_string();
        assert!(
            err.contains("\"files\": paths:") && err.contains(what),
            "{path}: {err}"
        );
    }
    with("/srv/docs").validate().unwrap();
}

#[test]
fn secrets_do_not_print() {
    let cfg = Config {
        admin_token: Some(Secret("hunter2".into())),
        ..Config::default()
    };
    assert!(!format!("{cfg:?}").contains("hunter2"));
}
