import Authenticators
import CBOR
#if canImport(Glibc)
    import Glibc
#endif
import CTAP2
import HIDTransport
import Logging
import NFCTransport
import Transport

/// The operations every benchmark driver measures.
enum BenchOperation: String, CaseIterable, Sendable {
    /// authenticatorGetInfo (CTAP 2.1 §6.4).
    case getinfo
    /// authenticatorMakeCredential (CTAP 2.1 §6.1), ES256, rk=false.
    case mc
    /// authenticatorGetAssertion (CTAP 2.1 §6.2) with the driver's credential in the allow list.
    case ga
}

/// What one batch of one operation measured, as a driver reports it.
struct BatchResult: Sendable {
    /// The operation.
    var operation: String
    /// Wall time of each operation, in nanoseconds; empty on failure.
    var latencies: [UInt64]
    /// The process's CPU time (user + system) over the batch, in nanoseconds.
    var cpuNanoseconds: UInt64
    /// Why the batch failed, if it did.
    var error: String?

    /// The driver protocol's JSON line.
    var jsonLine: String {
        if let error {
            return "{\"op\":\(JSONText.quoted(operation)),\"error\":\(JSONText.quoted(error))}"
        }
        let list = latencies.map(String.init).joined(separator: ",")
        return
            "{\"op\":\(JSONText.quoted(operation)),\"latencies_ns\":[\(list)],\"cpu_ns\":\(cpuNanoseconds)}"
    }
}

/// Our host as a benchmark driver: one device, one CTAP2 session, one credential for getAssertion.
///
/// The requests are the ones every driver sends: rp "bench.example", a fixed user, ES256,
/// rk=false, a fixed clientDataHash; replies are decoded, not verified (as python-fido2's
/// `Ctap2` and libfido2's `fido_dev_make_cred` do without a verify step).
final class HostDriver: Sendable {
    static let relyingParty = RelyingPartyEntity(id: "bench.example", name: "Bench")
    static let user = UserEntity(id: Array("bench-user-0001".utf8), name: "bench", displayName: "Bench User")
    static let clientDataHash: [UInt8] = (0..<32).map { UInt8($0) }
    /// How long a PC/SC card may take to appear in its reader after the key starts.
    static let openDeadline: Duration = .seconds(10)

    let session: CTAP2Session
    let credentialID: [UInt8]

    private init(session: CTAP2Session, credentialID: [UInt8]) {
        self.session = session
        self.credentialID = credentialID
    }

    /// Opens `uri` (`udp:`, `pcsc:` or `hid:`), runs getInfo and one makeCredential.
    static func open(uri: String, logger: Logger) async throws(BenchError) -> HostDriver {
        let connection = try await connect(uri: uri, logger: logger)
        let session = CTAP2Session(connection: connection, defaultTimeout: .seconds(30), logger: logger)
        let response: MakeCredentialResponse
        do throws(CTAP2Error) {
            _ = try await session.getInfo()
            response = try await session.makeCredential(makeCredentialRequest)
        } catch {
            await connection.close()
            throw BenchError(.device, "Setting up the benchmark on \(uri) failed: \(error.message)")
        }
        guard let credential = response.authData.attestedCredentialData else {
            await connection.close()
            throw BenchError(.device, "The key's makeCredential reply carries no credential.")
        }
        return HostDriver(session: session, credentialID: credential.credentialID)
    }

    static func connect(uri: String, logger: Logger) async throws(BenchError) -> any AuthenticatorConnection {
        let directory = AuthenticatorDirectory.system(logger: logger)
        // A virtual card reaches its reader a moment after its process starts: retry until the deadline.
        let deadline = Deadline.after(openDeadline)
        while true {
            do throws(AuthenticatorError) {
                return try await directory.open(uri: uri, deadline: deadline).session.connection
            } catch {
                let retry = uri.hasPrefix("pcsc:") && error.code != .invalidURI && error.code != .cancelled
                if !retry || deadline.hasPassed {
                    throw BenchError(.device, "Cannot open \(uri): \(error.message)")
                }
            }
            do { try await Task.sleep(for: .milliseconds(100)) } catch {
                throw BenchError(.device, "Opening \(uri) was cancelled.")
            }
        }
    }

    static var makeCredentialRequest: MakeCredentialRequest {
        MakeCredentialRequest(
            clientDataHash: clientDataHash, rp: relyingParty, user: user,
            pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)],
            options: CommandOptions(residentKey: false))
    }

    var getAssertionRequest: GetAssertionRequest {
        GetAssertionRequest(
            rpID: Self.relyingParty.id, clientDataHash: Self.clientDataHash,
            allowList: [PublicKeyCredentialDescriptor(id: credentialID)])
    }

    /// Runs `operation` once.
    func run(_ operation: BenchOperation) async throws(CTAP2Error) {
        switch operation {
        case .getinfo: _ = try await session.getInfo()
        case .mc: _ = try await session.makeCredential(Self.makeCredentialRequest)
        case .ga: _ = try await session.getAssertion(getAssertionRequest)
        }
    }

    /// Runs `operation` `count` times, timing each, and the process CPU time over all of them.
    ///
    /// The batch runs on the connection's I/O thread where it has one (as an application
    /// would, with `withTaskExecutorPreference`), so no operation hops between threads.
    /// SECURITYKEY_BENCH_EXECUTOR=pool keeps the batch on the cooperative pool instead (one
    /// hand-off to the I/O thread and back per operation), to measure the difference.
    func batch(_ operation: BenchOperation, count: Int) async -> BatchResult {
        let onPool = getenv("SECURITYKEY_BENCH_EXECUTOR").map { String(cString: $0) } == "pool"
        return await withTaskExecutorPreference(onPool ? nil : session.connection.preferredTaskExecutor) {
            await timedBatch(operation, count: count)
        }
    }

    private func timedBatch(_ operation: BenchOperation, count: Int) async -> BatchResult {
        var latencies: [UInt64] = []
        latencies.reserveCapacity(count)
        let clock = ContinuousClock()
        let cpuStart = ProcessCPUClock.nanoseconds()
        for _ in 0..<count {
            let start = clock.now
            do { try await run(operation) } catch {
                return BatchResult(
                    operation: operation.rawValue, latencies: [], cpuNanoseconds: 0, error: error.message)
            }
            latencies.append(start.duration(to: clock.now).nanoseconds)
        }
        let cpu = ProcessCPUClock.nanoseconds() &- cpuStart
        return BatchResult(operation: operation.rawValue, latencies: latencies, cpuNanoseconds: cpu)
    }

    /// Releases the device.
    func close() async {
        await session.connection.close()
    }
}

/// This process's CPU time, user + system (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`).
enum ProcessCPUClock {
    static func nanoseconds() -> UInt64 {
        var time = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time) == 0 else { return 0 }
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (negative durations count as zero).
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}


