import Authenticators
import CTAP2
import Transport

extension CLIError {
    /// The device layer's error: a CTAP2 or transport failure underneath keeps that layer's
    /// status and code; the device layer's own conditions get theirs.
    init(_ error: AuthenticatorError) {
        if let ctap = error.ctap2Error {
            // The CTAP2 error's status and code, with the device layer's sentence (it may say
            // more, as for a blocked PIN).
            let mapped = CLIError(ctap)
            self.init(mapped.status, code: mapped.code, error.message, ctapStatus: mapped.ctapStatus)
            return
        }
        if let transport = error.underlying as? TransportError {
            self.init(transport)
            return
        }
        self.init(CLIExitStatus(error.category), code: error.code.rawValue, error.message)
    }
}
