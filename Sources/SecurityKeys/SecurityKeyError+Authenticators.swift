import Authenticators
import CTAP2
import Transport

extension SecurityKeyError {
    /// The provider-level error for a device-layer failure: a CTAP2 failure keeps the CTAP2
    /// mapping; the device layer's own conditions (no key, key removed, nobody to ask) get
    /// their provider codes.
    init(_ error: AuthenticatorError) {
        func make(_ code: Code, _ message: String? = nil) -> SecurityKeyError {
            SecurityKeyError(code, message ?? error.message, underlying: error)
        }
        switch error.code {
        case .noDevice: self = make(.noDevice)
        case .removed: self = make(.noDevice, "The security key was removed during the request.")
        case .permissionDenied: self = make(.permissionDenied)
        case .timeout: self = make(.timeout)
        case .cancelled: self = make(.cancelled)
        case .notInteractive: self = make(.notInteractive)
        case .pinBlocked: self = make(.pinBlocked)
        case .pinNotSet: self = make(.pinNotSet)
        case .uvBlocked: self = make(.uvBlocked)
        case .pinUVNotSupported, .notSupported: self = make(.notHandled)
        default:
            if let ctap2 = error.ctap2Error {
                self = SecurityKeyError(ctap2)
            } else {
                self = make(.failed)
            }
        }
    }
}
