#if canImport(Glibc)
    import Glibc
#endif
import CBOR
import CTAP2
import Crypto
import Dispatch
import FoundationEssentials
import Logging
import Synchronization
import VirtualAuthenticator

extension FuzzTarget {
    /// The virtual key's CTAP2 command handler, which faces hostile hosts over vpcd, UDP and
    /// uhid: a CTAP 2.1 key with a fingerprint sensor, largeBlobs and every extension runs a
    /// sequence of commands (2-byte length prefixes). Every reply starts with a status byte; a
    /// success reply's body is a CTAP2 canonical CBOR map.
    ///
    /// A first record FC plus one byte picks the key (``FuzzKeyChoice``: PIN, FIDO_2_1_PRE,
    /// enterprise attestation on, small limits, built-in UV without a sensor, the user's touch
    /// and finger); FF, FE or FD alone is the key with PIN "1234".
    ///
    /// The fuzzer cannot do ECDH or HMAC, so the harness is the host's PIN/UV side
    /// (``FuzzHost``). In a clientPIN command whose keyAgreement is an empty byte string, it
    /// agrees a shared secret with the key (getKeyAgreement, the command's protocol) and puts in
    /// the platform's key; the newPinEnc given is taken as the plain new PIN (zero-padded to 64
    /// bytes) and encrypted, the pinHashEnc given as the plain current PIN, hashed and encrypted,
    /// and an empty pinUvAuthParam becomes the right one for setPIN or changePIN; a token the
    /// key returns is decrypted and kept, as a host keeps it. On a key with a PIN, a record FF
    /// (optionally followed by an RP ID) obtains a token through the host library with every
    /// permission bound to that RP ID (example.org by default), FE one with the permissions
    /// that need no RP ID. In every makeCredential, getAssertion, bioEnrollment,
    /// credentialManagement, largeBlobs or authenticatorConfig command whose pinUvAuthParam is
    /// an empty byte string, the harness puts the right pinUvAuthParam for that message under
    /// the token it holds. An hmac-secret or hmac-secret-mc input whose saltAuth is empty has
    /// its saltEnc taken as the plain salts (any multiple of 16 bytes up to 96, so the key's
    /// length check runs) and is rebuilt with a shared secret agreed with the key. An empty templateId (bioEnrollment) or credential `id` (allowList, excludeList,
    /// credentialManagement) becomes the last one the key returned, which is random. A record
    /// FB power-cycles the key (as a transport does on re-plugging), so PIN entry blocked after
    /// three wrong PINs opens again. F9 or FA followed by a command: the host cancels it
    /// (CTAPHID_CANCEL) before it starts or 5 ms in, while the user does not touch the key.
    /// Bio enrollment timeouts are capped at 20 ms.
    static let virtualKey = FuzzTarget("virtual-key", "virtual key CTAP2 command handler") {
        bytes throws(FuzzPropertyViolation) in
        var commands = lengthPrefixedRecords(bytes, limit: 40)
        let choice = FuzzKeyChoice(firstRecord: commands.first)
        if choice.consumesFirstRecord { commands.removeFirst() }
        let key = try choice.freshKey()
        try runBlocking { await choice.prepare(key) }
        var host = FuzzHost()
        for record in commands {
            if choice.pin, let first = record.first, first == 0xFF || first == 0xFE, record.count == 1 || first == 0xFF {
                // FF [RP ID]: every permission, bound to the RP ID (example.org when none is
                // given); FE: the permissions that need no RP ID.
                let rpID = record.count > 1 ? String(decoding: record.dropFirst(), as: UTF8.self) : "example.org"
                host.token = try pinToken(key, boundTo: first == 0xFF ? rpID : nil)
                continue
            }
            if record == [0xFD] { continue }
            if record == [0xFB] {
                try runBlocking { await key.powerCycle() }
                continue
            }
            // F9 / FA followed by a command: the host cancels it (see below).
            let cancel = record.count > 1 && (record[0] == 0xF9 || record[0] == 0xFA) ? record[0] : nil
            let completed = try withClientPINFields(
                withHMACSecretInputs(host.filled(cancel != nil ? Array(record.dropFirst()) : record), key), key)
            var filled = cappedBioTimeout(completed.command)
            if let token = host.token { filled = authorized(filled, token) }
            let command = filled
            let reply: [UInt8]
            if let cancel, !command.isEmpty {
                // The host cancels (CTAPHID_CANCEL) a request waiting for a touch or a finger:
                // before it starts (F9), or 5 ms in (FA).
                reply = try runCancelled(key, command, before: cancel == 0xF9, presence: choice.presence)
            } else {
                reply = try runBlocking { await key.handleCBOR(command) { _ in } }
            }
            host.learn(from: reply, command: command, secret: completed.secret)
            guard let status = reply.first else {
                throw FuzzPropertyViolation(description: "an empty reply to a CTAP2 command")
            }
            if status == 0, reply.count > 1 {
                let body = try? CBORDecoder(options: .ctap2).decode(Array(reply.dropFirst()))
                try expect(body?.mapValue != nil, "a success reply whose body is not a canonical CBOR map")
            }
        }
    }

    /// The virtual key's CTAP1/U2F APDU handler: every reply ends in a status word. The key
    /// handle a U2F_REGISTER returns is random, so an authenticate APDU (short form) whose key
    /// handle is empty gets the last one returned. A first record of one byte picks the user's
    /// answer or the key: F0 the user never touches it, F1 touches it 1 ms after the first
    /// request (the repeated request then succeeds), F2 a CTAP 2.1 key with alwaysUv turned on
    /// (authenticatorConfig), which turns U2F off.
    static let virtualKeyU2F = FuzzTarget("virtual-key-u2f", "virtual key U2F (CTAP1) APDU handler") {
        bytes throws(FuzzPropertyViolation) in
        var records = lengthPrefixedRecords(bytes, limit: 16)
        let choice = records.first.flatMap { $0.count == 1 && (0xF0...0xF2).contains($0[0]) ? $0[0] : nil }
        if choice != nil { records.removeFirst() }
        let key = try freshVirtualKey(choice == 0xF2 ? .ctap21 : .default)
        switch choice {
        case 0xF0?: try runBlocking { await key.setUserPresence(.never) }
        case 0xF1?: try runBlocking { await key.setUserPresence(.approveAfter(.milliseconds(1))) }
        case 0xF2?:
            // authenticatorConfig toggleAlwaysUv; the key has no PIN, so it needs no auth.
            let reply = try runBlocking { await key.handleCBOR([0x0D, 0xA1, 0x01, 0x02]) { _ in } }
            try expect(reply == [0], "toggleAlwaysUv fails on a key without a PIN")
        default: break
        }
        var keyHandle: [UInt8]?
        for record in records {
            let apdu = withKeyHandle(record, keyHandle)
            let reply = try runBlocking { await key.handleU2F(apdu) }
            try expect(reply.count >= 2, "a U2F reply without a status word")
            if apdu.count > 1, apdu[1] == 0x01, let registration = try? U2FRegistrationResponse(reply: reply)
            {
                keyHandle = registration.keyHandle
            }
        }
    }
}

/// `apdu` with its empty key handle (a short-form U2F_AUTHENTICATE: challenge, application and
/// a zero length byte) replaced by `keyHandle`, re-encoded in the extended form.
private func withKeyHandle(_ apdu: [UInt8], _ keyHandle: [UInt8]?) -> [UInt8] {
    guard let keyHandle, apdu.count >= 5 + 65, apdu[1] == 0x02, apdu[4] == 65, apdu[4 + 65] == 0 else {
        return apdu
    }
    let data = Array(apdu[5..<(5 + 64)]) + [UInt8(keyHandle.count)] + keyHandle
    return Array(apdu[0..<4]) + [0, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data + [0, 0]
}

/// The key configurations the targets start from.
enum FuzzKeyFlavour: CaseIterable {
    /// The default configuration (a CTAP 2.0 key with U2F).
    case `default`
    /// A CTAP 2.1 key with a fingerprint sensor, largeBlobs and every extension, no PIN.
    case ctap21
    /// The same with PIN "1234".
    case pin

    var configuration: VirtualKey.Configuration {
        switch self {
        case .default: VirtualKey.Configuration()
        case .ctap21: VirtualKey.Configuration.ctap21().withFingerprintSensor(Self.sensor)
        case .pin: VirtualKey.Configuration.ctap21(pin: fuzzPIN).withFingerprintSensor(Self.sensor)
        }
    }

    /// A sensor that gives bad samples among the good ones (parsed the way `virtual serve --bio`
    /// reads them). No "timeout" sample: the wait it causes is the request's to choose (up to 10
    /// minutes), which would stall the fuzzer without finding anything.
    static let sensor = VirtualKey.FingerprintSensor(
        captureTimeout: .milliseconds(50),
        samples: (try? ScriptedFingerprintSample.parse("good, too-fast, poor-quality,good,too-high,good,good"))
            ?? [])

    /// The same sensor with a finger that does not come (a "timeout" sample) among them; the
    /// harness caps the wait at 20 ms.
    static let sensorWithTimeout = VirtualKey.FingerprintSensor(
        captureTimeout: .milliseconds(20),
        samples: (try? ScriptedFingerprintSample.parse("good,timeout,too-low,good,exists,good,good")) ?? [])
}

/// The key a `virtual-key` input runs against, picked by its first record: FC and a byte of
/// flags, or FF, FE or FD alone (the CTAP 2.1 key with PIN "1234"); anything else is the CTAP
/// 2.1 key without a PIN. Flags: 0x01 PIN "1234"; 0x02 FIDO_2_1_PRE (credentialMgmtPreview,
/// bio enrollment as 0x40, legacy tokens); 0x04 enterprise attestation enabled for
/// example.org, and FIDO_2_2 (hmac-secret-mc); 0x08 small limits (two discoverable credentials, two list entries, a 1024-byte
/// message, per-credential counters, "none" attestation); 0x10 built-in UV without a sensor,
/// self attestation, a forced PIN change and getNextAssertion / enumeration windows of 1 ns;
/// 0x20 the user declines (with 0x40: touches after 1 ms); 0x40 the user never touches (2 ms
/// timeout); 0x80 the wrong finger.
struct FuzzKeyChoice: Hashable, Sendable {
    var flags: UInt8
    var consumesFirstRecord: Bool

    init(firstRecord: [UInt8]?) {
        if let record = firstRecord, record.count == 2, record[0] == 0xFC {
            (flags, consumesFirstRecord) = (record[1], true)
        } else if let record = firstRecord, [[0xFF], [0xFE], [0xFD]].contains(record) {
            (flags, consumesFirstRecord) = (0x01, false)
        } else {
            (flags, consumesFirstRecord) = (0, false)
        }
    }

    var pin: Bool { flags & 0x01 != 0 }

    var configuration: VirtualKey.Configuration {
        var c: VirtualKey.Configuration =
            flags & 0x02 != 0
            ? .ctap21Preview(pin: pin ? fuzzPIN : nil)
            : .ctap21(
                pin: pin ? fuzzPIN : nil, enterpriseAttestationEnabled: flags & 0x04 != 0,
                builtInUV: flags & 0x10 != 0)
        if flags & 0x10 == 0 {
            c = c.withFingerprintSensor(
                flags & 0x80 != 0 || flags & 0x02 != 0 ? FuzzKeyFlavour.sensorWithTimeout : FuzzKeyFlavour.sensor)
        } else {
            c.attestation = .selfAttestation
            c.forcePINChange = pin
            // Windows that close at once (the configuration takes no zero).
            c.getNextAssertionWindow = .nanoseconds(1)
            c.credentialManagementEnumerationWindow = .nanoseconds(1)
        }
        if flags & 0x04 != 0 {
            c.enterpriseAttestationRPIDs = ["example.org"]
            // A CTAP 2.2 key, whose default extensions add hmac-secret-mc.
            c.versions.append("FIDO_2_2")
        }
        if flags & 0x08 != 0 {
            c.maxDiscoverableCredentials = 2
            c.maxCredentialCountInList = 2
            c.maxMsgSize = 1024
            c.signatureCounter = .perCredential
            c.attestation = .none
        }
        if flags & 0x40 != 0 {
            c.userPresenceTimeout = .milliseconds(2)
            c.keepaliveInterval = .milliseconds(1)
        }
        return c
    }

    /// A key of this choice in its fixed starting state.
    func freshKey() throws(FuzzPropertyViolation) -> VirtualKey {
        if flags == 0 { return try freshVirtualKey(.ctap21) }
        if flags == 0x01 { return try freshVirtualKey(.pin) }
        let configuration = self.configuration
        let path = fuzzStateFiles.withLock { files -> String? in
            if let path = files[flags] { return path }
            let path =
                FileManager.default.temporaryDirectory.path + "/securitykey-fuzz-\(getpid())-virtual-key-\(String(flags, radix: 16)).state"
            do {
                _ = try VirtualKey(configuration: configuration, stateFile: path)
            } catch {
                // A combination the configuration refuses runs on the plain key (marked "").
                guard (error as? VirtualKeyError)?.code == .invalidConfiguration else { return nil }
                files[flags] = ""
                return ""
            }
            files[flags] = path
            return path
        }
        if path == "" { return try freshVirtualKey(pin ? .pin : .ctap21) }
        guard let path,
            let key = try? VirtualKey(
                configuration: configuration, stateFile: path, stateFileAccess: .readOnly, logger: fuzzKeyLogger)
        else {
            throw FuzzPropertyViolation(description: "the virtual key (flags \(flags)) does not start")
        }
        return key
    }

    /// How the user answers touch requests on this choice's key.
    var presence: UserPresencePolicy {
        switch flags & 0x60 {
        case 0x20: .deny
        case 0x40: .never
        case 0x60: .approveAfter(.milliseconds(1))
        default: .approve
        }
    }

    /// Sets the user's answers on `key`; a user who never touches only where the wait is short
    /// (not on the plain key a refused combination falls back to).
    func prepare(_ key: VirtualKey) async {
        let shortWait = key.configuration.userPresenceTimeout <= .milliseconds(2)
        if presence != .never || shortWait { await key.setUserPresence(presence) }
        if flags & 0x80 != 0 { await key.setUserVerification(.mismatch) }
    }
}

/// The state files of the ``FuzzKeyChoice`` keys made so far, by flags.
private let fuzzStateFiles = Mutex<[UInt8: String]>([:])

/// The fuzzed keys' logger: every level on, every message formatted and dropped, so the debug
/// messages a key builds from hostile requests (what `-vv` shows) run too.
let fuzzKeyLogger = Logger(label: "securitykey.fuzz.virtual-key") { _ in FormattingLogHandler() }

/// A swift-log handler at trace level that formats each message with its metadata and drops it.
private struct FormattingLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        _ = "\(event.level) \(event.message) \(metadata.merging(event.metadata ?? [:]) { $1 })"
    }
}

/// The PIN of the ``FuzzKeyFlavour/pin`` key.
let fuzzPIN = "1234"

/// The state file each flavour starts from: made once (attestation key and certificate, PIN),
/// then opened read-only, so each input starts from the same state and keeps its changes in
/// memory.
private let virtualKeyStateFiles: [FuzzKeyFlavour: String] = {
    var files: [FuzzKeyFlavour: String] = [:]
    for flavour in FuzzKeyFlavour.allCases {
        let path = FileManager.default.temporaryDirectory.path + "/securitykey-fuzz-\(getpid())-virtual-key-\(flavour).state"
        if (try? VirtualKey(configuration: flavour.configuration, stateFile: path)) != nil {
            files[flavour] = path
        }
    }
    return files
}()

/// A virtual key of `flavour` in its fixed starting state.
func freshVirtualKey(_ flavour: FuzzKeyFlavour) throws(FuzzPropertyViolation) -> VirtualKey {
    guard let path = virtualKeyStateFiles[flavour],
        let key = try? VirtualKey(
            configuration: flavour.configuration, stateFile: path, stateFileAccess: .readOnly, logger: fuzzKeyLogger)
    else {
        throw FuzzPropertyViolation(description: "the virtual key (\(flavour)) does not start")
    }
    return key
}

/// A pinUvAuthToken obtained with the PIN through the host library: every permission the key
/// grants, bound to example.org, or the permissions that need no RP ID, unbound.
private func pinToken(_ key: VirtualKey, boundTo rpID: String?) throws(FuzzPropertyViolation) -> PINUVAuthToken? {
    let token = try runBlocking { () async -> PINUVAuthToken? in
        let session = CTAP2Session(connection: InProcessConnection(handler: key, uri: "fuzz:virtual-key"))
        guard let info = try? await session.getInfo(),
            let pin = try? ClientPIN(session: session, info: info)
        else { return nil }
        let unbound: PINUVAuthTokenPermissions = [
            .credentialManagement, .bioEnrollment, .largeBlobWrite, .authenticatorConfiguration,
        ]
        return try? await pin.pinUVAuthToken(
            pin: fuzzPIN, permissions: rpID != nil ? unbound.union([.makeCredential, .getAssertion]) : unbound,
            rpID: rpID)
    }
    return token
}

/// The host side of the `virtual-key` harness: the pinUvAuthToken it holds and the random
/// identifiers the key returned last, put where a command has an empty one.
private struct FuzzHost {
    var token: PINUVAuthToken?
    var templateID: [UInt8]?
    var credentialID: [UInt8]?

    mutating func learn(from reply: [UInt8], command: [UInt8], secret: PINUVSharedSecret?) {
        guard reply.first == 0,
            let map = (try? CBORDecoder(options: .ctap2).decode(Array(reply.dropFirst())))?.mapValue
        else { return }
        switch command.first.map(CTAP2Command.init(rawValue:)) {
        case .bioEnrollment?, .bioEnrollmentPreview?:
            if let id = map[4]?.bytesValue { templateID = id }
        case .makeCredential?:
            if let bytes = map[2]?.bytesValue,
                let id = (try? AuthenticatorData(bytes: bytes))?.attestedCredentialData?.credentialID
            {
                credentialID = id
            }
        case .clientPIN?:
            // getPinToken (5), getPinUvAuthTokenUsingUvWithPermissions (6) or
            // getPinUvAuthTokenUsingPinWithPermissions (9): keep the token, as a host does.
            guard let secret, let encrypted = map[2]?.bytesValue, let token = try? secret.decrypt(encrypted),
                let request = (try? CBORDecoder(options: .ctap2).decode(Array(command.dropFirst())))?.mapValue
            else { return }
            let permissions =
                request[2]?.uint64Value == 5
                ? [.makeCredential, .getAssertion]
                : PINUVAuthTokenPermissions(rawValue: UInt8(truncatingIfNeeded: request[9]?.uint64Value ?? 0))
            self.token = PINUVAuthToken(
                token: token, pinUVAuthProtocol: secret.pinUVAuthProtocol, permissions: permissions,
                rpID: request[10]?.stringValue)
        default: break
        }
    }

    func filled(_ command: [UInt8]) -> [UInt8] {
        guard let code = command.first, templateID != nil || credentialID != nil,
            let value = try? CBORDecoder(options: .ctap2).decode(Array(command.dropFirst()))
        else { return command }
        let isBio =
            code == CTAP2Command.bioEnrollment.rawValue || code == CTAP2Command.bioEnrollmentPreview.rawValue
        let filled = fill(value, bio: isBio, depth: 0)
        return filled == value ? command : [code] + CBOREncoder.encode(filled)
    }

    private func fill(_ value: CBORValue, bio: Bool, depth: Int) -> CBORValue {
        guard depth < 4 else { return value }
        switch value {
        case .map(let map):
            var out = CBORMap()
            for entry in map {
                if entry.value.bytesValue == [] {
                    if entry.key == "id", let credentialID {
                        out[entry.key] = .byteString(credentialID)
                        continue
                    }
                    if bio, depth == 1, entry.key == 1, let templateID {
                        out[entry.key] = .byteString(templateID)
                        continue
                    }
                }
                out[entry.key] = fill(entry.value, bio: bio, depth: depth + 1)
            }
            return .map(out)
        case .array(let items):
            return .array(items.map { fill($0, bio: bio, depth: depth + 1) })
        default:
            return value
        }
    }
}

/// `command` (makeCredential or getAssertion) with each hmac-secret / hmac-secret-mc input whose
/// saltAuth is empty rebuilt: its saltEnc (32 or 64 bytes) as the plain salts, encrypted and
/// authenticated with a shared secret agreed with `key` (getKeyAgreement, protocol two).
private func withHMACSecretInputs(_ command: [UInt8], _ key: VirtualKey) throws(FuzzPropertyViolation)
    -> [UInt8]
{
    guard let code = command.first, code == 1 || code == 2,
        var map = (try? CBORDecoder(options: .ctap2).decode(Array(command.dropFirst())))?.mapValue
    else { return command }
    let extensionsKey: CBORValue = code == 1 ? 6 : 4
    guard var extensions = map[extensionsKey]?.mapValue else { return command }
    var changed = false
    for name in ["hmac-secret", "hmac-secret-mc"] {
        guard let input = extensions[.textString(name)]?.mapValue, input[3]?.bytesValue == [],
            let salts = input[2]?.bytesValue, !salts.isEmpty, salts.count % 16 == 0, salts.count <= 96
        else { continue }
        let secret = try runBlocking { () async -> PINUVSharedSecret? in
            let session = CTAP2Session(connection: InProcessConnection(handler: key, uri: "fuzz:hmac-secret"))
            guard let info = try? await session.getInfo(),
                let pin = try? ClientPIN(
                    session: session, info: info, pinUVAuthProtocol: PINUVAuthProtocolTwo())
            else { return nil }
            return try? await pin.sharedSecret()
        }
        // Built by hand rather than with HMACSecretInput, which takes only 32-byte salts: the
        // key's own length check is part of what is fuzzed.
        guard let secret, let saltEnc = try? secret.encrypt(salts), let saltAuth = try? secret.authenticate(saltEnc)
        else { continue }
        extensions[.textString(name)] = .map([
            1: .map(secret.platformKeyAgreement), 2: .byteString(saltEnc), 3: .byteString(saltAuth),
            4: .unsigned(UInt64(secret.pinUVAuthProtocol.version)),
        ])
        changed = true
    }
    guard changed else { return command }
    map[extensionsKey] = .map(extensions)
    return [code] + CBOREncoder.encode(.map(map))
}

/// `command` (clientPIN) completed by the harness as a host would complete it, when its
/// keyAgreement (3) is an empty byte string: the platform's key of a secret agreed with `key`
/// under the command's protocol (1), newPinEnc (5) encrypted from the plain PIN given (zero-
/// padded to 64 bytes), pinHashEnc (6) as LEFT(SHA-256(plain PIN given), 16) encrypted, and an
/// empty pinUvAuthParam (4) computed over newPinEnc (setPIN) or newPinEnc ‖ pinHashEnc
/// (changePIN).
private func withClientPINFields(_ command: [UInt8], _ key: VirtualKey) throws(FuzzPropertyViolation)
    -> (command: [UInt8], secret: PINUVSharedSecret?)
{
    guard command.first == CTAP2Command.clientPIN.rawValue,
        var map = (try? CBORDecoder(options: .ctap2).decode(Array(command.dropFirst())))?.mapValue,
        map[3]?.bytesValue == []
    else { return (command, nil) }
    let version = map[1]?.uint64Value ?? 2
    let secret = try runBlocking { () async -> PINUVSharedSecret? in
        let session = CTAP2Session(connection: InProcessConnection(handler: key, uri: "fuzz:client-pin"))
        let pinProtocol: any PINUVAuthProtocol = version == 1 ? PINUVAuthProtocolOne() : PINUVAuthProtocolTwo()
        guard let info = try? await session.getInfo(),
            let pin = try? ClientPIN(session: session, info: info, pinUVAuthProtocol: pinProtocol)
        else { return nil }
        return try? await pin.sharedSecret()
    }
    guard let secret else { return (command, nil) }
    map[3] = .map(secret.platformKeyAgreement)
    var newPINEnc: [UInt8] = []
    if let plain = map[5]?.bytesValue {
        let padded = plain.count < 64 ? plain + [UInt8](repeating: 0, count: 64 - plain.count) : plain
        if let encrypted = try? secret.encrypt(padded) {
            newPINEnc = encrypted
            map[5] = .byteString(encrypted)
        }
    }
    var pinHashEnc: [UInt8] = []
    if let plain = map[6]?.bytesValue, let encrypted = try? secret.encrypt(Array(SHA256.hash(data: plain).prefix(16))) {
        pinHashEnc = encrypted
        map[6] = .byteString(encrypted)
    }
    if map[4]?.bytesValue == [] {
        switch map[2]?.uint64Value {
        case 3?: if let param = try? secret.authenticate(newPINEnc) { map[4] = .byteString(param) }
        case 4?: if let param = try? secret.authenticate(newPINEnc + pinHashEnc) { map[4] = .byteString(param) }
        default: break
        }
    }
    return ([CTAP2Command.clientPIN.rawValue] + CBOREncoder.encode(.map(map)), secret)
}

/// `command` (bioEnrollment) with a timeoutMilliseconds over 20 lowered to 20: a capture with
/// no finger waits that long, and the fuzzer's choice (up to minutes) would stall it.
private func cappedBioTimeout(_ command: [UInt8]) -> [UInt8] {
    guard let code = command.first,
        code == CTAP2Command.bioEnrollment.rawValue || code == CTAP2Command.bioEnrollmentPreview.rawValue,
        var map = (try? CBORDecoder(options: .ctap2).decode(Array(command.dropFirst())))?.mapValue,
        var parameters = map[3]?.mapValue, let timeout = parameters[3]?.uint64Value, timeout > 20
    else { return command }
    parameters[3] = .unsigned(20)
    map[3] = .map(parameters)
    return [code] + CBOREncoder.encode(.map(map))
}

/// `command` with an empty pinUvAuthParam replaced by the right one for its message.
private func authorized(_ command: [UInt8], _ token: PINUVAuthToken) -> [UInt8] {
    guard let code = command.first,
        var map = (try? CBORDecoder(options: .ctap2).decode(Array(command.dropFirst())))?.mapValue
    else { return command }
    // (pinUvAuthParam key, pinUvAuthProtocol key) of each command.
    let keys: (param: CBORValue, protocol: CBORValue)
    switch CTAP2Command(rawValue: code) {
    case .makeCredential: keys = (8, 9)
    case .getAssertion: keys = (6, 7)
    case .bioEnrollment, .bioEnrollmentPreview: keys = (5, 4)
    case .credentialManagement, .credentialManagementPreview, .config: keys = (4, 3)
    case .largeBlobs: keys = (5, 6)
    default: return command
    }
    guard map[keys.param]?.bytesValue == [] else { return command }
    let subCommand = map[1]?.uint64Value.map { UInt8(truncatingIfNeeded: $0) } ?? 0
    let parameters: CBORMap?
    let param: [UInt8]?
    switch CTAP2Command(rawValue: code) {
    case .makeCredential, .getAssertion:
        let hash = map[code == 1 ? 1 : 2]?.bytesValue ?? []
        param = try? token.authenticate(MakeCredentialRequest.clientDataHashMessage(hash))
    case .bioEnrollment, .bioEnrollmentPreview:
        parameters = map[3]?.mapValue
        let bioSubCommand = map[2]?.uint64Value.map { UInt8(truncatingIfNeeded: $0) } ?? 0
        let message = BioEnrollmentRequest.pinUVAuthMessage(
            modality: subCommand, subCommand: bioSubCommand, parameters: parameters)
        param = try? token.pinUVAuthParam(for: BioEnrollmentRequest.self) { message }
    case .credentialManagement, .credentialManagementPreview:
        parameters = map[2]?.mapValue
        let message = CredentialManagementRequest.pinUVAuthMessage(subCommand: subCommand, parameters: parameters)
        param = try? token.pinUVAuthParam(for: CredentialManagementRequest.self) { message }
    case .config:
        parameters = map[2]?.mapValue
        let message = AuthenticatorConfigRequest.pinUVAuthMessage(subCommand: subCommand, parameters: parameters)
        param = try? token.pinUVAuthParam(for: AuthenticatorConfigRequest.self) { message }
    default:
        let offset = map[3]?.uint64Value.map { UInt32(truncatingIfNeeded: $0) } ?? 0
        let message = LargeBlobsRequest.pinUVAuthMessage(offset: offset, fragment: map[2]?.bytesValue ?? [])
        param = try? token.pinUVAuthParam(for: LargeBlobsRequest.self) { message }
    }
    guard let param else { return command }
    map[keys.param] = .byteString(param)
    map[keys.protocol] = .unsigned(UInt64(token.pinUVAuthProtocol.version))
    return [code] + CBOREncoder.encode(.map(map))
}

/// Runs `command` on `key` as a host that cancels it: the user never touches the key while it
/// runs, and the request's task is cancelled before it starts (`before`) or 5 ms in; then the
/// user answers with `presence` again.
///
/// Like ``runBlocking(_:)``, the one other place a fuzz target starts a task: the cancellation
/// is what a transport does when CTAPHID_CANCEL arrives.
private func runCancelled(
    _ key: VirtualKey, _ command: [UInt8], before: Bool, presence: UserPresencePolicy
) throws(FuzzPropertyViolation) -> [UInt8] {
    let result = Mutex<[UInt8]?>(nil)
    let done = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    let task = Task.detached {
        await key.setUserPresence(.never)
        if before { withUnsafeCurrentTask { $0?.cancel() } }
        started.signal()
        let reply = await key.handleCBOR(command) { _ in }
        await key.setUserPresence(presence)
        result.withLock { $0 = reply }
        done.signal()
    }
    started.wait()
    if !before {
        usleep(5000)
        task.cancel()
    }
    done.wait()
    guard let reply = result.withLock({ $0.take() }) else {
        throw FuzzPropertyViolation(description: "a cancelled request finished without a reply")
    }
    return reply
}
