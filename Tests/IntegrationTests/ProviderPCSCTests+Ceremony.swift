import Authenticators
import CTAP2
import Foundation
import NFCTransport
import Testing
import Transport
import VirtualAuthenticator

/// One ceremony (a pinUvAuthToken and the makeCredential that uses it) on a PC/SC card while
/// another application, python-fido2 over pyscard, asks the same card for tokens over and over:
/// each of its getPinToken calls voids the token the key issued before (CTAP 2.1 §6.5.5.7).
/// Held for the whole ceremony (`Authenticator.withCeremony`), the card keeps the other
/// application out from our token to its use; held per exchange only, it gets in between.
/// Part of ProviderPCSCTests, which runs on the bed alone (scripts/run-tests.sh).
extension ProviderPCSCTests {
    /// The PIN of the key in these tests.
    static let ceremonyPIN = "1234"
    /// How long the application works between obtaining the token and using it: long enough
    /// for the other application to get several tokens when it is let in.
    static let pause = Duration.milliseconds(600)

    /// The hammering process's counts.
    struct HammerCounts: Decodable {
        var tokens: Int
        var infos: Int
        var refused: Int
    }

    /// Registers with a token obtained in `ceremony` (or per exchange only, without one) while the
    /// hammer runs; returns the makeCredential outcome and what the hammer did meanwhile.
    func registerWhileHammered(inCeremony: Bool) async throws
        -> (outcome: Result<MakeCredentialResponse, AuthenticatorError>, hammer: HammerCounts, duringPause: Int)?
    {
        let env = ProcessInfo.processInfo.environment
        guard env["PCSCLITE_CSOCK_NAME"] != nil, let portText = env["SECURITYKEY_VPCD_PORT"],
            let port = UInt16(portText)
        else {
            Issue.record(Comment(rawValue: Self.howToRun))
            return nil
        }
        guard let python = env["SECURITYKEY_PYTHON"], !python.isEmpty else {
            Issue.record("SECURITYKEY_PYTHON is not set: point it at a Python with python-fido2 and pyscard.")
            return nil
        }
        let reader =
            (env["SECURITYKEY_VPCD_READERS"] ?? "Virtual PCD 00 00").split(separator: "|").first.map(String.init)
            ?? "Virtual PCD 00 00"
        let key = try VirtualKey(configuration: .init(pin: Self.ceremonyPIN))
        let server = VPCDCardServer(
            handler: key, configuration: .init(host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(50)))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await server.run() }
            defer { group.cancelAll() }
            let connection = try await Self.openWhenPresent("pcsc:\(reader)")
            let authenticator = try await Authenticator.open(connection, deadline: .after(.seconds(10)))
            let hammer = try Hammer(python: python, reader: reader)
            defer { _ = try? hammer.stop() }
            try await hammer.waitUntilReady()

            let deadline = Deadline.after(.seconds(20))
            var duringPause = 0
            let register = { () async throws(AuthenticatorError) -> MakeCredentialResponse in
                let verification = try await authenticator.verifyUser(
                    permissions: [.makeCredential], rpID: "example.org", interaction: FixedPIN(pin: Self.ceremonyPIN),
                    deadline: deadline)
                defer { verification.wipe() }
                // The application does its own work between the token and its use.
                // Counted from a moment in: the other application's last exchange before our
                // hold may still be reporting its token.
                try? await Task.sleep(for: .milliseconds(50))
                let before = hammer.tokensSoFar()
                try? await Task.sleep(for: Self.pause)
                duringPause = hammer.tokensSoFar() - before
                var request = MakeCredentialRequest(
                    clientDataHash: [UInt8](repeating: 7, count: 32), rp: RelyingPartyEntity(id: "example.org"),
                    user: UserEntity(id: [1, 2, 3], name: "alice"),
                    pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
                do throws(CTAP2Error) {
                    if let token = verification.token { try request.authorize(with: token) }
                    return try await authenticator.session.makeCredential(request, deadline: deadline)
                } catch {
                    throw AuthenticatorError(error, deviceURI: authenticator.uri)
                }
            }
            let outcome: Result<MakeCredentialResponse, AuthenticatorError>
            do throws(AuthenticatorError) {
                outcome = .success(
                    inCeremony
                        ? try await Authenticator.withCeremony(on: authenticator) { () throws(AuthenticatorError) in
                            try await register()
                        }
                        : try await register())
            } catch {
                outcome = .failure(error)
            }
            let counts = try hammer.stop()
            await authenticator.close()
            return (outcome, counts, duringPause)
        }
    }

    @Test func aCeremonyHoldsTheCardFromTheTokenToItsUse() async throws {
        guard let run = try await registerWhileHammered(inCeremony: true) else { return }
        if case .failure(let error) = run.outcome {
            Issue.record("the ceremony failed: \(error.code) \(error.message)")
        }
        // The other application was kept out while we held the token, and worked before and after.
        #expect(run.duringPause == 0, "the other application got \(run.duringPause) tokens inside our ceremony")
        #expect(run.hammer.tokens > 0)
    }

    /// What the ceremony-wide hold prevents: with per-exchange transactions only, the other
    /// application's getPinToken lands between ours and the makeCredential, which the key then
    /// refuses (CTAP2_ERR_PIN_AUTH_INVALID: the token it checks against is a newer one).
    @Test func perExchangeTransactionsLetAnotherApplicationVoidTheToken() async throws {
        guard let run = try await registerWhileHammered(inCeremony: false) else { return }
        #expect(run.duringPause > 0, "the other application got no token while ours waited to be used")
        switch run.outcome {
        case .success: Issue.record("makeCredential accepted a token another application had voided")
        case .failure(let error): #expect(error.ctap2Error?.status == .pinAuthInvalid, "\(error.code) \(error.message)")
        }
    }

    static func openWhenPresent(_ uri: String) async throws -> any AuthenticatorConnection {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do throws(TransportError) {
                return try await PCSCDiscovery().open(uri: uri, deadline: .after(.seconds(5)))
            } catch {
                if ContinuousClock.now > deadline { throw error }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

/// Answers every PIN prompt with one PIN.
private struct FixedPIN: AuthenticatorInteraction {
    var pin: String
    var canPrompt: Bool { true }
    func pin(_ prompt: PINPrompt) async -> String? { pin }
    func activity(_ activity: AuthenticatorActivity) {}
    func instruct(_ instruction: AuthenticatorInstruction) {}
}

/// Tests/CLITests/Python/hammer_pin_token.py running in its own process.
private final class Hammer: @unchecked Sendable {
    let process = Process()
    let directory: URL
    let output = Pipe()
    var stopFile: URL { directory.appendingPathComponent("stop") }
    private var counts: ProviderPCSCTests.HammerCounts?

    init(python: String, reader: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hammer-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CLITests/Python/hammer_pin_token.py")
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", try String(contentsOf: script, encoding: .utf8), reader, stopFile.path]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data("\(ProviderPCSCTests.ceremonyPIN)\n".utf8))
        try? input.fileHandleForWriting.close()
    }

    /// Waits (up to 15 s) for the hammer's first token.
    func waitUntilReady() async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while tokensSoFar() == 0 {
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw CeremonyTestError("the hammering process did not get a token")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Tokens obtained so far (the hammer appends a byte to its progress file per token).
    func tokensSoFar() -> Int {
        let path = directory.appendingPathComponent("stop.tokens").path
        return (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Stops the hammer and returns its counts.
    @discardableResult
    func stop() throws -> ProviderPCSCTests.HammerCounts {
        if let counts { return counts }
        _ = FileManager.default.createFile(atPath: stopFile.path, contents: nil)
        process.waitUntilExit()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        try? FileManager.default.removeItem(at: directory)
        let decoded = try JSONDecoder().decode(ProviderPCSCTests.HammerCounts.self, from: data)
        counts = decoded
        return decoded
    }
}

struct CeremonyTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
