//! A trial's two endpoints, its services (the World's routes and `/mcp`) and its model
//! gateway, opened where the backend wants them ([`Transport`]) and served until the trial
//! stops them. On loopback every process of the host can reach the ports, so both answer only
//! under one random per-trial token, the first segment of every path, which only the trial's
//! harness is told (it is in the URLs of [`Endpoints::Loopback`]); Unix sockets live in a
//! per-trial folder that only the trial's container sees, and need none.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::http::Listener;
use crate::llm::gateway::Gateway;
use crate::sandbox::{Endpoints, GATEWAY_SOCKET, SERVICES_SOCKET, Transport};
use crate::surfaces::mcp::McpServer;
use crate::world::World;

/// The trial's endpoints, open and not yet served.
pub(super) struct Opened {
    /// Where they are, as the backend is told.
    pub(super) endpoints: Endpoints,
    /// The token both answer under (loopback only).
    pub(super) token: Option<String>,
    services: Listener,
    gateway: Listener,
    /// The sockets' folder, removed when the guard drops.
    sockets: Option<tempfile::TempDir>,
}

/// Opens the trial's two listeners for `transport`; Unix sockets in `sockets` when the backend
/// names a folder (its worker container mounts it), else in a folder of their own.
pub(super) async fn open(
    transport: Transport,
    sockets: Option<&std::path::Path>,
) -> std::io::Result<Opened> {
    match transport {
        Transport::Loopback => {
            let services = TcpListener::bind("127.0.0.1:0").await?;
            let gateway = TcpListener::bind("127.0.0.1:0").await?;
            let token = crate::http::random_token();
            let endpoints = Endpoints::Loopback {
                services_url: format!("http://{}/{token}", services.local_addr()?),
                gateway_url: format!("http://{}/{token}", gateway.local_addr()?),
            };
            Ok(Opened {
                endpoints,
                token: Some(token),
                services: services.into(),
                gateway: gateway.into(),
                sockets: None,
            })
        }
        Transport::Sockets => {
            let (path, owned) = match sockets {
                Some(path) => (path.to_path_buf(), None),
                None => {
                    let folder = crate::sandbox::scratch::folder("sockets")?;
                    (folder.path().to_path_buf(), Some(folder))
                }
            };
            let bind = |name: &str| {
                // The trial before, in a lent folder, left its socket there.
                match std::fs::remove_file(path.join(name)) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        return Err(error);
                    }
                    _ => {}
                }
                UnixListener::bind(path.join(name))
            };
            let services = bind(SERVICES_SOCKET)?;
            let gateway = bind(GATEWAY_SOCKET)?;
            Ok(Opened {
                endpoints: Endpoints::Sockets { folder: path },
                token: None,
                services: Listener::Unix(services),
                gateway: Listener::Unix(gateway),
                sockets: owned,
            })
        }
    }
}

impl Opened {
    /// Serves `world` (with `mcp` at `/mcp`) and `gateway` (told the token already) until
    /// [`Serving::stop`].
    pub(super) fn serve(
        self,
        world: &Arc<Mutex<World>>,
        mcp: McpServer,
        gateway: &Gateway,
    ) -> Serving {
        let (stop_services, services_stopped) = oneshot::channel::<()>();
        let (stop_gateway, gateway_stopped) = oneshot::channel::<()>();
        let prefix: Arc<str> = match &self.token {
            Some(token) => format!("/{token}").into(),
            None => "".into(),
        };
        let (world, mcp) = (Arc::clone(world), Arc::new(mcp));
        // On the run's runtime, with the trial and its gateway, not on a server thread as
        // `serve` is: a trial's harness holds a connection or two, so the server thread's
        // gain (no contention for the world's lock among many connections) is not there, and
        // each request handed to it woke one more thread (a tenth of clawtest's CPU a trial,
        // 1,040 × 3: 1.50–1.54 → 1.33–1.40 ms). On loopback, a connection proves it is the
        // trial's own by the token in its first request; another trial's flood without it
        // cannot take the places (`http`).
        let services = tokio::spawn(crate::http::accept_loop(
            self.services,
            self.token.clone(),
            async {
                let _ = services_stopped.await;
            },
            move |stream| {
                crate::serve::serve_connection_behind(
                    stream,
                    Arc::clone(&world),
                    Some(Arc::clone(&mcp)),
                    Arc::clone(&prefix),
                )
            },
        ));
        let gateway = tokio::spawn(crate::http::serve_with_token(
            self.gateway,
            self.token.clone(),
            Arc::new(gateway.clone()),
            async {
                let _ = gateway_stopped.await;
            },
        ));
        Serving {
            stop: [stop_services, stop_gateway],
            servers: [services, gateway],
            _sockets: self.sockets,
        }
    }
}

/// The trial's endpoints being served.
pub(super) struct Serving {
    stop: [oneshot::Sender<()>; 2],
    servers: [JoinHandle<std::io::Result<()>>; 2],
    _sockets: Option<tempfile::TempDir>,
}

impl Serving {
    /// Stops both servers and waits until they have ended.
    pub(super) async fn stop(self) {
        for stop in self.stop {
            let _ = stop.send(());
        }
        for server in self.servers {
            let _ = server.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per trial, one scheme: both loopback URLs end in it, and the gateway and the
    /// services are told the same.
    #[tokio::test]
    async fn on_loopback_both_endpoints_answer_under_the_trials_one_token() {
        let opened = open(Transport::Loopback, None).await.unwrap();
        let token = opened.token.clone().unwrap();
        let Endpoints::Loopback {
            services_url,
            gateway_url,
        } = &opened.endpoints
        else {
            panic!("{:?}", opened.endpoints);
        };
        for url in [services_url, gateway_url] {
            assert!(url.ends_with(&format!("/{token}")), "{url}");
        }
        assert_ne!(services_url, gateway_url);
    }

    #[tokio::test]
    async fn sockets_need_no_token_and_live_in_their_folder() {
        let opened = open(Transport::Sockets, None).await.unwrap();
        assert_eq!(opened.token, None);
        let Endpoints::Sockets { folder } = &opened.endpoints else {
            panic!("{:?}", opened.endpoints);
        };
        assert!(folder.join(SERVICES_SOCKET).exists());
        assert!(folder.join(GATEWAY_SOCKET).exists());
        let folder = folder.clone();
        drop(opened);
        assert!(!folder.exists(), "removed with the trial");
    }
}
