import CTAPHID

extension VirtualKey.Configuration {
    /// A key that speaks only CTAP1/U2F, as keys made before CTAP2 do: getInfo lists `U2F_V2`
    /// alone and every CTAP2 message is answered CTAP1_ERR_INVALID_COMMAND. Serve it with
    /// ``UDPCTAPHIDServer/Configuration/ctap1OnlyCapabilities`` (no CBOR capability) or
    /// ``VPCDCardServer/Configuration/ctap1Only`` (NFCCTAP_MSG answered `6D00`).
    public static func ctap1Only() -> VirtualKey.Configuration {
        var configuration = VirtualKey.Configuration(versions: ["U2F_V2"], pinUvAuthProtocols: [])
        configuration.ctap1Only = true
        return configuration
    }
}

extension UDPCTAPHIDServer.Configuration {
    /// The CTAPHID INIT capabilities of a U2F-only key: wink, no CBOR, NMSG clear.
    public static let ctap1OnlyCapabilities: CTAPHIDCapabilities = [.wink]
}

extension VPCDCardServer.Configuration {
    /// A U2F-only card: SELECT answers `U2F_V2`, NFCCTAP_MSG answers `6D00`.
    public var ctap1Only: Bool {
        get { !acceptsCTAP2 && selectAnswer == Array("U2F_V2".utf8) }
        set {
            acceptsCTAP2 = !newValue
            if newValue { selectAnswer = Array("U2F_V2".utf8) }
        }
    }
}
