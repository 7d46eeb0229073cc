import Crypto
import SecurityKeyDaemonClient
import SecurityKeys

extension FuzzTarget {
    /// securitykeyd's answers as its client reads them (`SecurityKeyDaemonClient`): the
    /// CreateCredential and GetCredential response JSON with their extension results, and a
    /// SELECT_CREDENTIAL state's account list. The first byte picks which; the rest is the text.
    ///
    /// Properties: a refusal is `malformed-response` with a sentence; what is accepted carries
    /// the device URI given, and a PRF output is 32 bytes; an account list is accepted with a
    /// credential ID per account.
    static let daemonResponses = FuzzTarget(
        "daemon-responses", "securitykeyd's response JSON and account lists, as its client reads them"
    ) {
        bytes throws(FuzzPropertyViolation) in
        guard let selector = bytes.first else { return }
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        switch selector % 3 {
        case 0:
            switch Result(catching: { () throws(SecurityKeyDaemonClientError) in
                try SecurityKeyDaemonClient.registration(responseJSON: text, deviceURI: "udp:fuzz")
            }) {
            case .success(let registration):
                try expect(registration.deviceURI == "udp:fuzz", "the device URI changed")
            case .failure(let error): try checkDaemonRefusal(error)
            }
        case 1:
            switch Result(catching: { () throws(SecurityKeyDaemonClientError) in
                try SecurityKeyDaemonClient.assertion(responseJSON: text, deviceURI: "udp:fuzz")
            }) {
            case .success(let assertion):
                try expect(assertion.deviceURI == "udp:fuzz", "the device URI changed")
                if let prf = assertion.prf {
                    try expect(prf.first.bitCount == 256, "a PRF output that is not 32 bytes")
                }
            case .failure(let error): try checkDaemonRefusal(error)
            }
        default:
            guard let accounts = SecurityKeyDaemonClient.accounts(offeredIn: text) else { return }
            try expect(accounts.allSatisfy { !$0.id.isEmpty }, "an account without an ID")
        }
    }

    private static func checkDaemonRefusal(_ error: SecurityKeyDaemonClientError) throws(FuzzPropertyViolation) {
        try expect(error.code == .malformedResponse, "a response refused with \(error.code.rawValue)")
        try expect(!error.message.isEmpty, "a refusal without a sentence")
    }
}
