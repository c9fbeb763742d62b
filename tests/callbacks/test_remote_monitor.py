"""RemoteMonitor posts each epoch's logs to an HTTP server, in the two forms
Keras's documents: a form field holding the JSON, or the JSON as the body."""

import http.server
import json
import threading
import urllib.parse

import numpy as np
import pytest

import loopax


@pytest.fixture
def server():
    """A local HTTP server recording (path, content type, body) of each POST."""
    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"],
                             self.headers.get("X-Run"), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}", received
    httpd.shutdown()
    httpd.server_close()


def fitted(callback, epochs=2):
    loopax.utils.set_random_seed(0)
    x = np.linspace(-1, 1, 32, dtype="float32")[:, None]
    model = loopax.Sequential([loopax.Input((1,)), loopax.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    return model.fit(x, 2 * x, batch_size=8, epochs=epochs, verbose=0, callbacks=[callback])


def test_each_epoch_is_posted_as_a_form_field_holding_the_logs_json(server):
    root, received = server
    history = fitted(loopax.callbacks.RemoteMonitor(root=root, headers={"X-Run": "7"}))
    assert [r[0] for r in received] == ["/publish/epoch/end/"] * 2
    for epoch, (_, content_type, run, body) in enumerate(received):
        assert content_type == "application/x-www-form-urlencoded" and run == "7"
        sent = json.loads(urllib.parse.parse_qs(body.decode())["data"][0])
        assert sent == {"epoch": epoch, "loss": pytest.approx(history.history["loss"][epoch]),
                        "mae": pytest.approx(history.history["mae"][epoch])}


def test_send_as_json_posts_the_logs_as_the_body(server):
    root, received = server
    history = fitted(loopax.callbacks.RemoteMonitor(root=root, path="/logs",
                                                    send_as_json=True), epochs=1)
    (path, content_type, _, body), = received
    assert path == "/logs" and content_type == "application/json"
    assert json.loads(body) == {"epoch": 0, "loss": pytest.approx(history.history["loss"][0]),
                                "mae": pytest.approx(history.history["mae"][0])}


def test_an_unreachable_server_warns_and_training_goes_on():
    with pytest.warns(UserWarning, match="Could not reach RemoteMonitor root server at "
                                         "http://127.0.0.1:9"):
        history = fitted(loopax.callbacks.RemoteMonitor(root="http://127.0.0.1:9",
                                                        timeout=2), epochs=1)
    assert len(history.history["loss"]) == 1
