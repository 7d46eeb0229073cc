import CBOR
import Transport

extension DeviceDescriptor {
    /// The descriptor's members of a JSON document about a key (`list --json`, fleet rows):
    /// URI, transport, USB IDs, manufacturer, product and serial number (null when unknown).
    public var jsonMembers: [(String, JSONValue)] {
        [
            ("uri", .string(uri)),
            ("transport", .string(transport.rawValue)),
            ("vendorId", vendorID.map { .integer(Int64($0)) } ?? .null),
            ("productId", productID.map { .integer(Int64($0)) } ?? .null),
            ("manufacturer", manufacturer.map(JSONValue.string) ?? .null),
            ("product", product.map(JSONValue.string) ?? .null),
            ("serialNumber", serialNumber.map(JSONValue.string) ?? .null),
        ]
    }
}
