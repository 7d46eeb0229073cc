import Authenticators
import CBOR
import CTAP2
import SecurityKeys
import Transport
import VirtualAuthenticator
import WebAuthnVerification

/// The documented exit statuses of `securitykey` (Docs/CLI.md, `securitykey --help`).
struct CLIExitStatus: RawRepresentable, Hashable, Sendable {
    var rawValue: Int32
    init(rawValue: Int32) { self.rawValue = rawValue }

    /// The command did what was asked.
    static let success = CLIExitStatus(rawValue: 0)
    /// Any failure not listed below (a device error, a malformed input or reply).
    static let failure = CLIExitStatus(rawValue: 1)
    /// A signature or attestation did not verify.
    static let verificationFailed = CLIExitStatus(rawValue: 2)
    /// No security key was found, or the one named by `--device` is not there.
    static let noDevice = CLIExitStatus(rawValue: 3)
    /// The operation was cancelled, timed out, or the user declined on the key.
    static let cancelled = CLIExitStatus(rawValue: 4)
    /// The PIN is wrong, blocked, not set, or breaks the key's PIN rules.
    static let pinProblem = CLIExitStatus(rawValue: 5)
    /// The key or its transport cannot do what was asked.
    static let notSupported = CLIExitStatus(rawValue: 6)
    /// `fleet --policy`: at least one key does not satisfy the policy.
    static let policyFailed = CLIExitStatus(rawValue: 7)
    /// The command line is wrong (swift-argument-parser's EX_USAGE).
    static let usage = CLIExitStatus(rawValue: 64)

    /// The status of a failure of this kind.
    init(_ category: FailureCategory) {
        switch category {
        case .verificationFailed: self = .verificationFailed
        case .noDevice: self = .noDevice
        case .cancelled: self = .cancelled
        case .pinProblem: self = .pinProblem
        case .notSupported: self = .notSupported
        case .usage: self = .usage
        default: self = .failure
        }
    }

    /// The table shown by `--help` and Docs/CLI.md.
    static let helpText = """
        EXIT STATUS
          0   success
          1   other error (device error, malformed input or reply)
          2   a signature or attestation did not verify
          3   no security key found, or the --device is not there
          4   cancelled, timed out, or declined on the key
          5   PIN problem (wrong, blocked, not set, against the key's rules)
          6   not supported by the key or its transport
          7   fleet --policy: at least one key fails the policy
          64  usage error
        """
}

/// The one error type of the command-line tool: a stable code, one sentence, and the exit
/// status it maps to.
struct CLIError: Error, Sendable, CustomStringConvertible {
    /// A stable, switchable code in kebab-case (`no-device`, `credential-excluded`); the same
    /// strings the libraries use where the error came from one. Docs/CLI.md lists them.
    var code: String
    /// One sentence for the user.
    var message: String
    /// The exit status.
    var status: CLIExitStatus
    /// The CTAP status byte the key answered with, where the error came from one; JSON gives
    /// it beside the code as `ctapStatus: {name, value}` (`CTAP2_ERR_CREDENTIAL_EXCLUDED`, 25).
    var ctapStatus: CTAP2.CTAPStatus?

    init(_ status: CLIExitStatus, code: String, _ message: String, ctapStatus: CTAP2.CTAPStatus? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.ctapStatus = ctapStatus
    }

    /// The JSON error object: `code`, `message`, and `ctapStatus` where the key sent one.
    var json: JSONValue {
        var members: [(String, JSONValue)] = [("code", .string(code)), ("message", .string(message))]
        if let ctapStatus {
            members.append(
                (
                    "ctapStatus",
                    .object([("name", .string(ctapStatus.name)), ("value", .integer(Int64(ctapStatus.rawValue)))])
                ))
        }
        return .object(members)
    }

    var description: String { message }

    /// A usage error found after parsing (conflicting or malformed option values).
    static func usage(_ message: String) -> CLIError {
        CLIError(.usage, code: "usage", message)
    }

    /// Input that cannot be decoded.
    static func invalidInput(_ message: String) -> CLIError {
        CLIError(.failure, code: "invalid-input", message)
    }

    init(_ error: TransportError) {
        self.init(CLIExitStatus(error.category), code: error.code.rawValue, error.message)
    }

    init(_ error: CTAP2Error) {
        if error.code == .transport, let underlying = error.underlying as? TransportError {
            self.init(underlying)
            return
        }
        var message = error.message
        if error.category == .pinProblem, error.code != .pinTokenExpired, let retries = error.retriesLeft,
            !message.contains("attempt")
        {
            message += " \(retries) attempt(s) left."
        }
        self.init(CLIExitStatus(error.category), code: error.code.rawValue, message, ctapStatus: error.status)
    }

    /// The provider's error: where a CTAP2 or transport error lies under it, that error's code
    /// (the same one the other commands give), with the provider's sentence.
    init(_ error: SecurityKeyError) {
        let mapped: CLIError? =
            if let ctap = error.underlying as? CTAP2Error { CLIError(ctap) }
            else if let transport = error.underlying as? TransportError { CLIError(transport) } else { nil }
        self.init(
            CLIExitStatus(error.category), code: mapped?.code ?? error.code.rawValue, error.message,
            ctapStatus: mapped?.ctapStatus)
    }

    /// A relying-party check that failed: signature and attestation problems keep their codes
    /// (exit 2, or 6 for what cannot be verified here), malformed keys and statements are
    /// "malformed-response" (exit 1) as when CTAP2 verified them, and every ceremony check
    /// (client data, RP ID, flags, counter) is "verification-failed" (exit 2).
    init(_ error: WebAuthnVerificationError) {
        switch error.code {
        case .unsupportedAlgorithm, .unsupportedAttestationFormat:
            self.init(.notSupported, code: error.code.rawValue, error.message)
        case .verificationFailed, .invalidCertificate:
            self.init(.verificationFailed, code: error.code.rawValue, error.message)
        case .malformedInput:
            self.init(.failure, code: CTAP2Error.Code.malformedResponse.rawValue, error.message)
        case .invalidClientDataHash:
            self.init(.failure, code: CTAP2Error.Code.invalidRequest.rawValue, error.message)
        default:
            self.init(
                .verificationFailed, code: WebAuthnVerificationError.Code.verificationFailed.rawValue,
                error.message)
        }
    }

    init(_ error: VirtualKeyError) {
        self.init(.failure, code: error.code.rawValue, error.message)
    }

    /// Any error, mapped to the closest documented status.
    static func from(_ error: any Error) -> CLIError {
        switch error {
        case let e as CLIError: e
        case let e as CTAP2Error: CLIError(e)
        case let e as TransportError: CLIError(e)
        case let e as SecurityKeyError: CLIError(e)
        case let e as AuthenticatorError: CLIError(e)
        case let e as VirtualKeyError: CLIError(e)
        case let e as StructureDecodingError: CLIError.invalidInput(e.message)
        case is CancellationError:
            CLIError(.cancelled, code: TransportError.Code.cancelled.rawValue, "The operation was cancelled.")
        default: CLIError(.failure, code: "error", "\(error)")
        }
    }
}
