import _SecurityKeyInternals
import CBOR
import CTAP2

/// Persistent PIN/UV tokens (CTAP 2.2 pcmr) kept between runs, so read-only credential
/// management and the getInfo members they decrypt need no PIN: one CBOR file, mode 0600, in
/// `$XDG_STATE_HOME/securitykey/` (`~/.local/state/securitykey/`), replaced atomically.
///
/// A record is bound to one key by its AAGUID and, where the key sends encIdentifier, by the
/// identifier it decrypted to when saved: a record fits a key when its token decrypts the key's
/// encIdentifier to that identifier again (a token the key no longer holds decrypts to other
/// bytes). A key without encIdentifier is matched by AAGUID and device URI. The file holds
/// secrets; its records never print their tokens.
public struct PersistentTokenStore: Sendable {
    /// One stored token.
    public struct Record: Sendable, Hashable, CustomStringConvertible {
        /// The AAGUID of the key it was obtained from.
        public var aaguid: AAGUID
        /// The decrypted encIdentifier when it was saved; nil for a key without one.
        public var identifier: [UInt8]?
        /// The device URI it was saved through.
        public var deviceURI: String
        /// The PIN/UV auth protocol (1 or 2) its pinUvAuthParams use.
        public var pinUVAuthProtocol: Int
        /// When it was saved, in seconds since 1970 (UTC).
        public var savedAt: Int64
        /// The token.
        var token: [UInt8]

        /// A token object to authenticate with (the caller wipes it).
        public func pinUVAuthToken() -> PINUVAuthToken {
            let pinProtocol: any PINUVAuthProtocol =
                pinUVAuthProtocol == 1 ? PINUVAuthProtocolOne() : PINUVAuthProtocolTwo()
            return PINUVAuthToken(
                token: token, pinUVAuthProtocol: pinProtocol, permissions: .persistentCredentialManagementReadOnly,
                rpID: nil)
        }

        /// Redacted: never the token.
        public var description: String {
            "PersistentTokenStore.Record(aaguid: \(aaguid), device: \(deviceURI), protocol: \(pinUVAuthProtocol))"
        }
    }

    /// The file.
    public let path: String

    /// A store in the file at `path`.
    public init(path: String) { self.path = path }

    /// `$XDG_STATE_HOME/securitykey/tokens.cbor`, or `$HOME/.local/state/securitykey/tokens.cbor`;
    /// nil when neither variable gives an absolute directory.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return state + "/securitykey/" + fileName
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return home + "/.local/state/securitykey/" + fileName
        }
        return nil
    }

    static let fileName = "tokens.cbor"
    static let magic = "securitykey persistent tokens"
    static let formatVersion = 1
    /// More records than anyone has keys; caps what a damaged file makes us keep.
    static let maxRecords = 256

    private var file: PrivateFile { PrivateFile(path: path, maxSize: 256 << 10) }

    /// Every record, oldest first; an absent file has none.
    public func records() throws(AuthenticatorError) -> [Record] {
        let bytes: [UInt8]?
        do { bytes = try file.read() } catch { throw Self.failure(error.description) }
        guard let bytes else { return [] }
        return try Self.decode(bytes, path: path)
    }

    /// Adds `record`, replacing the records of the same key (same AAGUID and identifier, or
    /// same AAGUID and device URI for a key without one).
    public func save(_ record: Record) throws(AuthenticatorError) {
        var all = try records().filter { !Self.sameKey($0, record) }
        all.append(record)
        try write(all)
    }

    /// Removes the records `shouldRemove` picks; returns how many went.
    @discardableResult
    public func remove(where shouldRemove: (Record) -> Bool) throws(AuthenticatorError) -> Int {
        let all = try records()
        let kept = all.filter { !shouldRemove($0) }
        if kept.count != all.count { try write(kept) }
        return all.count - kept.count
    }

    static func sameKey(_ a: Record, _ b: Record) -> Bool {
        guard a.aaguid == b.aaguid else { return false }
        if let x = a.identifier, let y = b.identifier { return x == y }
        return a.identifier == nil && b.identifier == nil && a.deviceURI == b.deviceURI
    }

    private func write(_ records: [Record]) throws(AuthenticatorError) {
        do {
            if records.isEmpty {
                try file.remove()
            } else {
                var bytes = Self.encode(records)
                defer { bytes.wipe() }
                try file.write(bytes, createDirectory: true)
            }
        } catch {
            throw Self.failure(error.description)
        }
    }

    private enum Field {
        static let magic = "magic"
        static let version = "version"
        static let records = "tokens"
        static let aaguid = "aaguid"
        static let identifier = "identifier"
        static let device = "device"
        static let pinUVAuthProtocol = "pinUvAuthProtocol"
        static let savedAt = "savedAt"
        static let token = "token"
    }

    static func encode(_ records: [Record]) -> [UInt8] {
        let items: [CBORValue] = records.map { r in
            var m: CBORMap = [
                .textString(Field.aaguid): .byteString(r.aaguid.bytes),
                .textString(Field.device): .textString(r.deviceURI),
                .textString(Field.pinUVAuthProtocol): .int(r.pinUVAuthProtocol),
                .textString(Field.savedAt): .int(Int(r.savedAt)),
                .textString(Field.token): .byteString(r.token),
            ]
            if let id = r.identifier { m[.textString(Field.identifier)] = .byteString(id) }
            return .map(m)
        }
        return CBOREncoder.encode(
            .map([
                .textString(Field.magic): .textString(magic), .textString(Field.version): .int(formatVersion),
                .textString(Field.records): .array(items),
            ]))
    }

    static func decode(_ bytes: [UInt8], path: String) throws(AuthenticatorError) -> [Record] {
        let damaged = failure("The token store \(path) is damaged; remove it and save the tokens again.")
        guard let value = try? CBORDecoder(options: .ctap2).decode(bytes), let map = value.mapValue,
            map[.textString(Field.magic)]?.stringValue == magic
        else { throw damaged }
        guard map[.textString(Field.version)]?.intValue == formatVersion else {
            throw failure("The token store \(path) was written by another version of securitykey.")
        }
        guard let items = map[.textString(Field.records)]?.arrayValue, items.count <= maxRecords else { throw damaged }
        var records: [Record] = []
        for item in items {
            guard let m = item.mapValue,
                let aaguidBytes = m[.textString(Field.aaguid)]?.bytesValue, let aaguid = AAGUID(bytes: aaguidBytes),
                let device = m[.textString(Field.device)]?.stringValue, device.utf8.count <= 4096,
                let pinProtocol = m[.textString(Field.pinUVAuthProtocol)]?.intValue, pinProtocol == 1 || pinProtocol == 2,
                let savedAt = m[.textString(Field.savedAt)]?.intValue,
                let token = m[.textString(Field.token)]?.bytesValue, token.count == 16 || token.count == 32
            else { throw damaged }
            var identifier: [UInt8]?
            if let v = m[.textString(Field.identifier)] {
                guard let id = v.bytesValue, (1...64).contains(id.count) else { throw damaged }
                identifier = id
            }
            records.append(
                Record(
                    aaguid: aaguid, identifier: identifier, deviceURI: device, pinUVAuthProtocol: pinProtocol,
                    savedAt: Int64(savedAt), token: token))
        }
        return records
    }

    static func failure(_ message: String) -> AuthenticatorError {
        AuthenticatorError(.tokenStoreUnavailable, message)
    }
}

extension AuthenticatorError.Code {
    /// The stored-token file cannot be read or written, or is damaged.
    public static let tokenStoreUnavailable = Self(rawValue: "token-store-unavailable")
    /// A stored persistent token no longer works on its key (the PIN was changed or the key reset).
    public static let storedTokenInvalid = Self(rawValue: "stored-token-invalid")
}
