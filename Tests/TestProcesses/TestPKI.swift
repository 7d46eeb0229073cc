import Foundation

/// A throwaway PKI made with the `openssl` command: certificate authorities and end entities
/// with CRL distribution points, revocations and CRLs, in a directory a test may serve over HTTP
/// (``LoopbackHTTPServer``). Every certificate is `NAME.pem` (and `NAME.der`), its key
/// `NAME.key`; a CA's CRL is `NAME.crl` (DER). Nothing here is produced by the code under test.
public final class TestPKI: Sendable {
    /// The directory holding the files.
    public let directory: URL

    /// A PKI in a new temporary directory, removed with the value.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("test-pki-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The path of `name` in the directory.
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The contents of `name`.
    public func bytes(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(name)) else {
            throw BedError("no \(name)")
        }
        return [UInt8](data)
    }

    /// The key algorithm of a certificate.
    public enum KeyType: Sendable {
        /// ECDSA P-256.
        case p256
        /// RSA 2048 (RS256 JWS signatures).
        case rsa
    }

    /// Makes certificate `name` with `subject` (an OpenSSL `/CN=...` string), issued by the CA
    /// `issuer` (self-signed when nil), a CA or an end entity, naming `crlURLs` as its CRL
    /// distribution points, with serial number `serial` (hex), valid for ten years from now.
    public func certificate(
        _ name: String, subject: String, issuer: String?, isCA: Bool, crlURLs: [String] = [],
        serial: String, key: KeyType = .p256
    ) throws {
        var ext = [
            "basicConstraints = critical,CA:\(isCA ? "TRUE" : "FALSE")",
            "keyUsage = critical," + (isCA ? "keyCertSign,cRLSign" : "digitalSignature"),
            "subjectKeyIdentifier = hash",
        ]
        if issuer != nil { ext.append("authorityKeyIdentifier = keyid") }
        if !crlURLs.isEmpty {
            ext.append("crlDistributionPoints = " + crlURLs.map { "URI:\($0)" }.joined(separator: ","))
        }
        let config = """
            [req]
            distinguished_name = dn
            prompt = no
            [dn]
            CN = unused
            [ext]
            \(ext.joined(separator: "\n"))
            [ca]
            default_ca = ca_default
            [ca_default]
            database = \(path("\(name).index"))
            crlnumber = \(path("\(name).crlnumber"))
            default_md = sha256

            """
        try Data(config.utf8).write(to: directory.appendingPathComponent("\(name).cnf"))
        if isCA {
            try Data().write(to: directory.appendingPathComponent("\(name).index"))
            try Data("01\n".utf8).write(to: directory.appendingPathComponent("\(name).crlnumber"))
        }
        let algorithm =
            key == .rsa
            ? ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
            : ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        try openssl(["genpkey"] + algorithm + ["-out", path("\(name).key")])
        if let issuer {
            try openssl([
                "req", "-new", "-key", path("\(name).key"), "-subj", subject, "-config", path("\(name).cnf"),
                "-out", path("\(name).csr"),
            ])
            try openssl([
                "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(issuer).pem"), "-CAkey",
                path("\(issuer).key"), "-set_serial", "0x\(serial)", "-days", "3650", "-extfile",
                path("\(name).cnf"), "-extensions", "ext", "-out", path("\(name).pem"),
            ])
        } else {
            try openssl([
                "req", "-new", "-x509", "-key", path("\(name).key"), "-subj", subject, "-days", "3650",
                "-set_serial", "0x\(serial)", "-config", path("\(name).cnf"), "-extensions", "ext",
                "-out", path("\(name).pem"),
            ])
        }
        try openssl(["x509", "-in", path("\(name).pem"), "-outform", "DER", "-out", path("\(name).der")])
    }

    /// Records certificate `name` as revoked in its issuer CA's database (the next
    /// ``crl(of:hours:)`` lists it).
    public func revoke(_ name: String, issuer: String) throws {
        try openssl([
            "ca", "-config", path("\(issuer).cnf"), "-keyfile", path("\(issuer).key"), "-cert",
            path("\(issuer).pem"), "-revoke", path("\(name).pem"),
        ])
    }

    /// Writes `ca`'s CRL to `ca.crl` (DER), issued now with a nextUpdate `hours` from now.
    public func crl(of ca: String, hours: Int = 48) throws {
        try openssl([
            "ca", "-config", path("\(ca).cnf"), "-keyfile", path("\(ca).key"), "-cert", path("\(ca).pem"),
            "-gencrl", "-crlhours", "\(hours)", "-out", path("\(ca).crl.pem"),
        ])
        try openssl(["crl", "-in", path("\(ca).crl.pem"), "-outform", "DER", "-out", path("\(ca).crl")])
    }

    /// The signature of `message` with `name`'s key and SHA-256 (`openssl dgst -sign`: PKCS #1
    /// v1.5 for RSA keys, DER ECDSA for EC keys).
    public func sign(_ message: [UInt8], with name: String) throws -> [UInt8] {
        let input = directory.appendingPathComponent("message-\(UUID())")
        try Data(message).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        try openssl([
            "dgst", "-sha256", "-sign", path("\(name).key"), "-out", input.path + ".sig", input.path,
        ])
        defer { try? FileManager.default.removeItem(atPath: input.path + ".sig") }
        guard let signature = FileManager.default.contents(atPath: input.path + ".sig") else {
            throw BedError("openssl dgst wrote no signature")
        }
        return [UInt8](signature)
    }

    private func openssl(_ arguments: [String]) throws {
        let run = try TestProcess.run("/usr/bin/openssl", arguments, timeout: .seconds(60))
        guard run.status == 0 else {
            throw BedError("openssl \(arguments.joined(separator: " ")) failed: \(run.stderrText)")
        }
    }
}
