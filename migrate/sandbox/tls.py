"""TLS material for the sandbox's SSL listener: a CA, a broker and a client certificate."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from migrate.errors import SandboxError

TLS_KEY_PASSWORD = "sandbox-only-tls-key-password"  # encrypts the client's private key
# extensions of each certificate the CA signs
_SIGNED = {
    "broker": "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    "client": "extendedKeyUsage=clientAuth\n",
}


def make_tls(directory: Path) -> dict[str, Path]:
    """A CA, a broker certificate for 127.0.0.1/localhost and a client certificate, as PEM files.

    Returns {"ca": CA certificate, "broker": broker key + certificate,
    "client": client key + certificate}; the client's key is encrypted with TLS_KEY_PASSWORD.
    Raises SandboxError when openssl fails.
    """
    directory.mkdir(parents=True, exist_ok=True)
    # The password goes through the environment, never on a command line.
    env = {**os.environ, "ZK2KAFKA_SANDBOX_KEY_PASSWORD": TLS_KEY_PASSWORD}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]

    def openssl(*args: str) -> None:
        try:
            done = subprocess.run(["openssl", *args], cwd=directory, env=env,
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxError(f"openssl is needed for the sandbox's TLS listener: {e}") from None
        if done.returncode != 0:
            raise SandboxError(f"openssl {args[0]} failed: {done.stderr.strip()}")

    openssl("req", "-x509", *ec, "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem",
            "-days", "7", "-subj", "/CN=zk2kafka sandbox CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, extensions in _SIGNED.items():
        (directory / f"{name}.ext").write_text(extensions)
        # Java 17 cannot read OpenSSL 3's encrypted PKCS#8 (PBES2/AES), so the broker's key stays
        # in the clear.
        if name == "client":
            protect = ["-passout", "env:ZK2KAFKA_SANDBOX_KEY_PASSWORD"]
        else:
            protect = ["-nodes"]
        openssl("req", *ec, "-keyout", f"{name}-key.pem", *protect, "-out", f"{name}.csr",
                "-subj", f"/CN=zk2kafka-sandbox-{name}")
        openssl("x509", "-req", "-in", f"{name}.csr",
                "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-days", "7", "-extfile", f"{name}.ext", "-out", f"{name}-cert.pem")
        pem = directory / f"{name}.pem"
        key = (directory / f"{name}-key.pem").read_text()
        pem.write_text(key + (directory / f"{name}-cert.pem").read_text())
        pem.chmod(0o600)
    return {"ca": directory / "ca.pem", "broker": directory / "broker.pem",
            "client": directory / "client.pem"}
