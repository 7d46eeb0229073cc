import CTAP2
import Transport

extension SecurityKeyError {
    /// The provider-level error for a CTAP2 failure, chosen by ``CTAP2Error/Code`` alone (the
    /// CTAP2 module classifies the key's status): PIN, UV and user-action failures become codes
    /// a caller can switch on, keeping the CTAP2 error as the underlying one.
    init(_ error: CTAP2Error) {
        func make(_ code: Code, _ message: String? = nil) -> SecurityKeyError {
            SecurityKeyError(code, message ?? error.message, underlying: error)
        }
        switch error.code {
        case .cancelled: self = make(.cancelled, "The request was cancelled.")
        case .transport:
            let transport = error.underlying as? TransportError
            switch transport?.code {
            case .timeout?: self = make(.timeout, "The security key did not answer before the deadline.")
            case .cancelled?: self = make(.cancelled, "The request was cancelled.")
            case .permissionDenied?: self = make(.permissionDenied)
            case .noDevice?, .closed?:
                self = make(.noDevice, "The security key went away during the request.")
            default: self = make(.failed)
            }
        case .malformedResponse, .verificationFailed, .messageTooLarge, .invalidCertificate:
            self = make(.invalidResponse)
        case .invalidRequest: self = make(.invalidRequest)
        case .unsupportedAlgorithm:
            // From the key (it has a status): none of the offered algorithms; else one this
            // library cannot verify, which the error's own sentence says.
            self = make(
                .notHandled,
                error.status == nil ? nil : "The security key supports none of the requested algorithms.")
        case .pinUVNotSupported: self = make(.notHandled)
        case .pinInvalid: self = make(.pinInvalid)
        case .pinAuthBlocked: self = make(.pinAuthBlocked)
        case .pinBlocked: self = make(.pinBlocked)
        case .pinNotSet: self = make(.pinNotSet)
        case .pinRequired: self = make(.pinRequired)
        case .pinChangeRequired: self = make(.pinChangeRequired)
        case .uvBlocked: self = make(.uvBlocked)
        case .credentialExcluded:
            self = make(
                .matchedExcludedCredential, "This security key is already registered for this account.")
        case .noCredentials:
            self = make(.noCredentials, "This security key holds no credential for this site.")
        case .operationDenied: self = make(.operationDenied, "The request was declined on the security key.")
        case .userActionTimeout: self = make(.timeout, "The security key was not touched in time.")
        case .keepaliveCancel: self = make(.cancelled, "The request was cancelled.")
        case .unsupportedOption, .unsupportedExtension: self = make(.notHandled)
        default: self = make(.failed)
        }
    }
}
