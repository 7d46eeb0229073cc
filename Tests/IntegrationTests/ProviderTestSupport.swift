import _SecurityKeyInternals
import Foundation
import SecurityKeys
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// Answers PIN prompts from a list and account choices by user ID, recording what was asked.
final class ScriptedInteraction: SecurityKeyInteraction {
    private let pins: Mutex<[String]>
    private let chosenUserID: [UInt8]?
    let pinPrompts = Mutex<[Int?]>([])
    let offeredAccounts = Mutex<[SecurityKeyAccount]>([])

    init(pins: [String] = [], chooseUserID: [UInt8]? = nil) {
        self.pins = Mutex(pins)
        self.chosenUserID = chooseUserID
    }

    func pin(deviceURI: String, attemptsLeft: Int?) async -> String? {
        pinPrompts.withLock { $0.append(attemptsLeft) }
        return pins.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func chooseAccount(_ accounts: [SecurityKeyAccount]) async -> Int? {
        offeredAccounts.withLock { $0 = accounts }
        return accounts.firstIndex { $0.userID == chosenUserID }
    }
}

/// Forwards to a handler and counts the requests it answered with CTAP2_ERR_KEEPALIVE_CANCEL
/// (0x2D), i.e. the requests the host cancelled.
final class CancelCountingHandler: CTAPMessageHandler {
    let inner: any CTAPMessageHandler
    let cancels = Mutex(0)
    init(inner: any CTAPMessageHandler) { self.inner = inner }
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async
        -> [UInt8]
    {
        let reply = await inner.handleCBOR(message, keepalive: keepalive)
        if reply == [0x2D] { cancels.withLock { $0 += 1 } }
        return reply
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { await inner.handleU2F(apdu) }
    func powerCycle() async { await inner.powerCycle() }
    func wink() async { await inner.wink() }
}

/// The status events buffered up to and including the next `.done` (every performed request
/// ends with one, so this never waits for a request that is not running).
func drain(_ stream: AsyncStream<SecurityKeyStatus>) async -> [SecurityKeyStatus] {
    var events: [SecurityKeyStatus] = []
    for await event in stream {
        events.append(event)
        if event == .done { break }
    }
    return events
}

/// python-fido2's server checks a registration (attestation statement verified with
/// python-fido2's attestation classes) and an assertion (signature verified with the public key
/// from the registration), both given as WebAuthn JSON.
let fido2ServerCheck = """
    import json, sys
    from fido2.server import Fido2Server
    from fido2.webauthn import PublicKeyCredentialRpEntity, AttestationConveyancePreference
    from fido2.attestation import Attestation
    d = json.load(open(sys.argv[1]))
    def verify_attestation(att, client_data_hash):
        Attestation.for_type(att.fmt)().verify(att.att_stmt, att.auth_data, client_data_hash)
    server = Fido2Server(PublicKeyCredentialRpEntity(name="rp", id=d["rpID"]),
                         attestation=AttestationConveyancePreference.DIRECT,
                         verify_attestation=verify_attestation)
    auth = server.register_complete({"challenge": d["registrationChallenge"], "user_verification": None},
                                    json.loads(d["registration"]))
    cred = auth.credential_data
    server.authenticate_complete({"challenge": d["assertionChallenge"], "user_verification": None},
                                 [cred], json.loads(d["assertion"]))
    print("verified", auth.fmt if hasattr(auth, "fmt") else "", cred.credential_id.hex())
    """

/// Runs ``fido2ServerCheck`` on a registration and an assertion; records a failure when
/// SECURITYKEY_PYTHON is unset.
func verifyWithPythonFIDO2(
    rpID: String, registrationChallenge: [UInt8], registration: SecurityKeyCredentialRegistration,
    assertionChallenge: [UInt8], assertion: SecurityKeyCredentialAssertion,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
        Issue.record(
            "SECURITYKEY_PYTHON is unset: point it at a python3 with python-fido2 (.venv/bin/python3).",
            sourceLocation: sourceLocation)
        return
    }
    let input: [String: String] = [
        "rpID": rpID, "registrationChallenge": Base64URL.encode(registrationChallenge),
        "assertionChallenge": Base64URL.encode(assertionChallenge),
        "registration": registration.webAuthnJSON, "assertion": assertion.webAuthnJSON,
    ]
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("provider-check-\(UUID()).json")
    try JSONSerialization.data(withJSONObject: input).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let (status, output, errors) = try await run(python, ["-c", fido2ServerCheck, file.path])
    #expect(status == 0, "python-fido2 rejected the result: \(errors)", sourceLocation: sourceLocation)
    #expect(
        output.contains(registration.credentialID.map { String(format: "%02x", $0) }.joined()),
        sourceLocation: sourceLocation)
}

/// Runs a program to completion and returns its status, stdout and stderr.
func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
    let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (status, output, errors)
}

/// Random bytes for challenges and fake credential IDs.
func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255) }
}
