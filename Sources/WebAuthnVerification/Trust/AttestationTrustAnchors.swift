import FoundationEssentials
import _SecurityKeyInternals
import SwiftASN1
import X509

/// A set of trust anchors for attestation certificate paths, read from PEM bundles (several
/// certificates in one file), DER files, or a directory of them.
public struct AttestationTrustAnchors: Sendable, Hashable {
    /// The largest file read as an anchor file; bundles of hundreds of roots fit easily.
    public static let maximumFileSize = 4 * 1024 * 1024
    /// The file name endings read from a directory; other files are ignored.
    public static let directoryExtensions: Set<String> = ["pem", "crt", "cer", "der"]

    /// The anchors.
    public var certificates: [Certificate]

    /// Creates a store holding `certificates`.
    public init(_ certificates: [Certificate] = []) { self.certificates = certificates }

    /// Reads the anchors at `path`: one file (a PEM bundle or one DER certificate) or every
    /// `.pem`, `.crt`, `.cer` and `.der` file directly inside a directory.
    public init(contentsOf path: String) throws(WebAuthnVerificationError) {
        self.init()
        try add(contentsOf: path)
    }

    /// Reads the anchors at each of `paths`, in order (each a file or a directory, as
    /// ``init(contentsOf:)``); the first that cannot be read ends it.
    public init(contentsOf paths: [String]) throws(WebAuthnVerificationError) {
        self.init()
        for path in paths { try add(contentsOf: path) }
    }

    /// Adds the anchors at `path` (a file or a directory, as ``init(contentsOf:)``).
    public mutating func add(contentsOf path: String) throws(WebAuthnVerificationError) {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw WebAuthnVerificationError(.invalidTrustAnchor, "The trust anchor file \(path) does not exist.")
        }
        if isDirectory {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
            } catch {
                throw WebAuthnVerificationError(
                    .invalidTrustAnchor, "The trust anchor directory \(path) cannot be read.", underlying: error)
            }
            var found = false
            for name in names
            where Self.directoryExtensions.contains(URL(filePath: name).pathExtension.lowercased()) {
                let file = path.hasSuffix("/") ? path + name : path + "/" + name
                var subdirectory = false
                guard FileManager.default.fileExists(atPath: file, isDirectory: &subdirectory),
                    !subdirectory
                else { continue }
                certificates += try Self.parse(Self.read(file), source: file)
                found = true
            }
            guard found else {
                throw WebAuthnVerificationError(
                    .invalidTrustAnchor, "The trust anchor directory \(path) holds no certificate files.")
            }
        } else {
            certificates += try Self.parse(Self.read(path), source: path)
        }
    }

    private static func read(_ path: String) throws(WebAuthnVerificationError) -> [UInt8] {
        // Read one byte past the limit to tell a file at the limit from a larger one.
        guard let data = FileIO.read(path: path, upTo: maximumFileSize + 1) else {
            throw WebAuthnVerificationError(.invalidTrustAnchor, "The trust anchor file \(path) cannot be read.")
        }
        guard data.count <= maximumFileSize else {
            throw WebAuthnVerificationError(
                .invalidTrustAnchor, "The trust anchor file \(path) is larger than \(maximumFileSize) bytes.")
        }
        return data
    }

    /// The certificates in `bytes`: every CERTIFICATE block of a PEM bundle, or one DER
    /// certificate. Other PEM blocks (keys, CRLs) are skipped; a file with no certificate fails.
    public static func parse(_ bytes: [UInt8], source: String = "input") throws(WebAuthnVerificationError)
        -> [Certificate]
    {
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN ") {
            do {
                let documents = try PEMDocument.parseMultiple(pemString: text)
                let certificates = try documents.filter { $0.discriminator == "CERTIFICATE" }
                    .map { try Certificate(derEncoded: $0.derBytes) }
                guard !certificates.isEmpty else {
                    throw WebAuthnVerificationError(.invalidTrustAnchor, "\(source) holds no PEM certificate.")
                }
                return certificates
            } catch let error as WebAuthnVerificationError {
                throw error
            } catch {
                throw WebAuthnVerificationError(
                    .invalidTrustAnchor, "\(source) is not a valid PEM certificate bundle.", underlying: error)
            }
        }
        do {
            return [try Certificate(derEncoded: bytes)]
        } catch {
            throw WebAuthnVerificationError(
                .invalidTrustAnchor, "\(source) is neither PEM nor a DER X.509 certificate.", underlying: error)
        }
    }
}
