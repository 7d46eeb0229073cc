import CBOR

/// The parameter map shared by the commands built of subcommands (authenticatorConfig,
/// authenticatorCredentialManagement; CTAP 2.1 §6.8, §6.11): subCommand (0x01),
/// subCommandParams (0x02), pinUvAuthProtocol (0x03), pinUvAuthParam (0x04); absent members
/// are omitted.
func subcommandParameters(
    subCommand: UInt8, subCommandParams: CBORMap?, pinUVAuthProtocol: UInt64?, pinUVAuthParam: [UInt8]?
) -> CBORMap {
    var m = CBORMap()
    m[0x01] = .unsigned(UInt64(subCommand))
    if let subCommandParams { m[0x02] = .map(subCommandParams) }
    if let pinUVAuthProtocol { m[0x03] = .unsigned(pinUVAuthProtocol) }
    if let pinUVAuthParam { m[0x04] = .byteString(pinUVAuthParam) }
    return m
}
