//! `rediss://`: a member joins a redis-server that speaks TLS only, with a certificate
//! from a private CA made here with the `openssl` command, and follows the fleet.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tripgate::{Breaker, Config, FakeClock, Outcome, State, SECOND};
use tripgate_redis::server::RedisServer;
use tripgate_redis::{Options, Store};

fn openssl(dir: &Path, args: &[&str]) {
    let ok = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs (apt-get install openssl)");
    assert!(
        ok.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1 signed by it.
fn certificates(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "1",
            "-subj",
            "/CN=tripgate test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "1",
            "-extfile",
            "san.ext",
        ],
    );
}

fn member(url: &str, ca: &[u8]) -> (Arc<Breaker<Arc<FakeClock>>>, tripgate_redis::Fleet) {
    let config = Config {
        failure_threshold: 3,
        min_calls: 3,
        cooldown: 10 * SECOND,
        fleet_quorum: Some(1),
        ..Config::default()
    };
    let breaker = Arc::new(Breaker::with_clock(config, Arc::new(FakeClock::new(SECOND))).unwrap());
    let options = Options::new(url)
        .key("a shared key of 32 bytes, really")
        .tls_root_cert(ca);
    let fleet = Store::connect(options)
        .unwrap()
        .join("tls", Arc::clone(&breaker))
        .unwrap();
    (breaker, fleet)
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_follow_the_fleet_over_tls() {
    let dir = std::env::temp_dir().join(format!("tripgate-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let redis = RedisServer::start_tls(&dir.join("server.crt"), &dir.join("server.key"))
        .unwrap_or_else(|e| panic!("{e}"));
    let url = format!("rediss://127.0.0.1:{}", redis.port());
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let (a, a_fleet) = member(&url, &ca);
    let (b, b_fleet) = member(&url, &ca);
    eventually("connected over TLS", || {
        a_fleet.status().connected && b_fleet.status().connected
    })
    .await;
    for _ in 0..3 {
        if let Ok(permit) = a.acquire() {
            permit.record(Outcome::Failure);
        }
    }
    eventually("B opened", || b.state() == State::Open).await;
    // Without the CA, the server's certificate is not trusted: never connected.
    let (_c, c_fleet) = member(&url, b"not a certificate");
    let (_d, d_fleet) = {
        let config = Config {
            fleet_quorum: Some(1),
            ..Config::default()
        };
        let breaker = Arc::new(Breaker::new(config).unwrap());
        let fleet = Store::connect(Options::new(url.as_str()))
            .unwrap()
            .join("tls", Arc::clone(&breaker))
            .unwrap();
        (breaker, fleet)
    };
    let later = Instant::now() + Duration::from_millis(300);
    while Instant::now() < later {
        assert!(!c_fleet.status().connected && !d_fleet.status().connected);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
