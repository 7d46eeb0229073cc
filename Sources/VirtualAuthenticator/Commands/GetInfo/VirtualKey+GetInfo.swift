import CBOR

extension CTAPCommand {
    /// authenticatorGetInfo (§6.4).
    public static let getInfo = CTAPCommand(rawValue: 0x04)
}

extension VirtualKey.CommandHandler {
    /// authenticatorGetInfo, offered by every CTAP2 key.
    static let getInfo = VirtualKey.CommandHandler(.getInfo, name: "getInfo") {
        (key, _, _, _) async throws(VirtualKeyError) -> CBORMap? in
        key.getInfo()
    }
}

extension VirtualKey {
    /// authenticatorGetInfo response members (CTAP 2.1 §6.4).
    enum GetInfoMember {
        static let versions = 0x01
        static let extensions = 0x02
        static let aaguid = 0x03
        static let options = 0x04
        static let maxMsgSize = 0x05
        static let pinUvAuthProtocols = 0x06
        static let maxCredentialCountInList = 0x07
        static let maxCredentialIdLength = 0x08
        static let transports = 0x09
        static let algorithms = 0x0A
        static let forcePINChange = 0x0C
        static let minPINLength = 0x0D
        static let firmwareVersion = 0x0E
        static let maxRPIDsForSetMinPINLength = 0x10
        static let remainingDiscoverableCredentials = 0x14
    }

    /// authenticatorGetInfo (CTAP 2.1 §6.4). With clientPIN, `clientPin` says whether a PIN is
    /// set and `pinUvAuthToken` is true (unless configured false); these, and `alwaysUv`, `ep`
    /// and `makeCredUvNotRqd` when present, follow the state rather than the configured options.
    func getInfo() -> CBORMap {
        var options = CBORMap()
        for (name, value) in configuration.options { options[.textString(name)] = .boolean(value) }
        if configuration.supportsClientPIN {
            options["clientPin"] = .boolean(pinIsSet)
            if configuration.supportsPINUVAuthTokenCommands {
                options["pinUvAuthToken"] = true
            } else {
                options["pinUvAuthToken"] = nil
            }
        }
        if configuration.supportsAlwaysUV { options["alwaysUv"] = .boolean(alwaysUVEnabled) }
        if configuration.options["makeCredUvNotRqd"] != nil {
            options["makeCredUvNotRqd"] = .boolean(makeCredentialUVNotRequiredNow)
        }
        if configuration.supportsEnterpriseAttestation {
            // Without an identity there is nothing to enable: the option stays out.
            options["ep"] = enterpriseAttestationKey == nil ? nil : .boolean(enterpriseAttestationEnabled)
        }
        var info = CBORMap()
        info[GetInfoMember.versions] = .array(configuration.versions.map { .textString($0) })
        if !supportedExtensions.isEmpty {
            info[GetInfoMember.extensions] = .array(supportedExtensions.map { .textString($0) })
        }
        info[GetInfoMember.aaguid] = .byteString(aaguid)
        info[GetInfoMember.options] = .map(options)
        info[GetInfoMember.maxMsgSize] = .int(configuration.maxMsgSize)
        if configuration.supportsClientPIN {
            info[GetInfoMember.pinUvAuthProtocols] = .array(configuration.pinUvAuthProtocols.map { .int($0) })
            info[GetInfoMember.forcePINChange] = .boolean(pinIsSet && state.forcePINChange)
            info[GetInfoMember.minPINLength] = .int(currentMinPINLength)
            if configuration.supportsSetMinPINLength {
                info[GetInfoMember.maxRPIDsForSetMinPINLength] = .int(
                    configuration.maxRPIDsForSetMinPINLength)
            }
        }
        if configuration.isCTAP21 && configuration.supportsDiscoverableCredentials {
            info[GetInfoMember.remainingDiscoverableCredentials] = .int(remainingDiscoverableCredentials)
        }
        info[GetInfoMember.maxCredentialCountInList] = .int(configuration.maxCredentialCountInList)
        info[GetInfoMember.maxCredentialIdLength] = .int(configuration.maxCredentialIdLength)
        info[GetInfoMember.transports] = .array(configuration.transports.map { .textString($0) })
        info[GetInfoMember.algorithms] = .array(
            configuration.algorithms.map { .map(["type": "public-key", "alg": .int($0.rawValue)]) })
        if configuration.supportsLargeBlobs {
            info[.int(Self.maxSerializedLargeBlobArrayMember)] = .int(configuration.maxSerializedLargeBlobArray)
        }
        if let firmware = configuration.firmwareVersion {
            info[GetInfoMember.firmwareVersion] = .int(firmware)
        }
        addExtensionInfo(to: &info)
        addCTAP22Info(to: &info)
        addFingerprintSensorInfo(options: &options, info: &info)
        addPersistentTokenInfo(options: &options, info: &info)
        info[GetInfoMember.options] = .map(options)
        return info
    }
}
