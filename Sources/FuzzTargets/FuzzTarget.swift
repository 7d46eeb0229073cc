import _SecurityKeyInternals
import Dispatch
import Synchronization

/// A property of a parser that one input broke: the fuzzer traps on it, the replay tests fail.
public struct FuzzPropertyViolation: Error, CustomStringConvertible, Sendable {
    /// What the parser did wrong, in one sentence.
    public var description: String
}

/// One libFuzzer target: a parser of untrusted bytes and the properties its output must keep.
///
/// Every target is written once here and run by both the libFuzzer executable (Fuzz/) and the
/// regression replay tests (Tests/FuzzTargetsTests), so a crash file replays the exact logic
/// that found it. Inputs that the parser refuses with a typed error are fine; a trap, a
/// sanitizer report or a ``FuzzPropertyViolation`` is a bug.
public struct FuzzTarget: Sendable {
    /// The target's name: FUZZ_TARGET, the corpus folder and the regression folder use it.
    public let name: String
    /// What the target feeds, in one line (scripts/fuzz.sh prints it).
    public let summary: String
    private let body: @Sendable ([UInt8]) throws(FuzzPropertyViolation) -> Void

    init(
        _ name: String, _ summary: String,
        _ body: @escaping @Sendable ([UInt8]) throws(FuzzPropertyViolation) -> Void
    ) {
        self.name = name
        self.summary = summary
        self.body = body
    }

    /// Feeds one input to the parser and checks the target's properties.
    public func run(_ bytes: [UInt8]) throws(FuzzPropertyViolation) { try body(bytes) }

    /// Every target, in the order `make fuzz` runs them. A new target is one file with a
    /// `static let` and one line here.
    public static let all: [FuzzTarget] = [
        .cbor, .ctaphidHost, .ctaphidDevice, .iso7816, .getInfo, .authenticatorData, .coseKey,
        .ctap2Responses, .attestationObject, .tpm, .androidKeyDescription, .safetyNet, .clientData,
        .mdsBLOB, .mdsPayload, .crl, .trustAnchors, .virtualKey, .virtualKeyU2F, .virtualKeyState, .bioEnrollment, .largeBlob,
        .u2fResponses, .extensions, .webAuthnJSON, .base64, .ctaphidCapture, .structureDecoder,
        .daemonResponses, .credentialJSON, .pamAuthorizationFile, .pamSSHKeyFile, .pamModuleOptions,
    ]

    /// The target called `name`, if there is one.
    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Fails the current input with `message` unless `condition` holds.
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzPropertyViolation) {
    if !condition { throw FuzzPropertyViolation(description: message()) }
}

/// Splits an input into records of a 2-byte big-endian length and that many bytes (the last
/// record takes what is left), so one input can carry a sequence of messages.
func lengthPrefixedRecords(_ bytes: [UInt8], limit: Int = 64) -> [[UInt8]] {
    var records: [[UInt8]] = []
    var rest = bytes[...]
    while !rest.isEmpty, records.count < limit {
        guard rest.count >= 2 else {
            records.append(Array(rest))
            break
        }
        let count = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
        rest = rest.dropFirst(2)
        records.append(Array(rest.prefix(count)))
        rest = rest.dropFirst(count)
    }
    return records
}

/// Runs async parser code to completion from libFuzzer's synchronous callback
/// (``SynchronousCall``): a fuzz harness has no caller to own the work; the library code it
/// calls stays structured.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) throws(FuzzPropertyViolation) -> T {
    guard let value = SynchronousCall.run(body) else {
        throw FuzzPropertyViolation(description: "The async work finished without a result.")
    }
    return value
}
