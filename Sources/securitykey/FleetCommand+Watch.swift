import Authenticators
import CBOR
import Fleet
import FoundationEssentials
import WebAuthnVerification

extension FleetCommand {
    /// `fleet --watch`: one line per key as it arrives (after its inspection) and as it leaves,
    /// until the process is interrupted. JSON lines carry `"event": "arrived"` (followed by the
    /// key's usual members) or `"event": "left"` and the URI.
    func watchFleet(
        _ inventory: FleetInventory, rules: FleetPolicy?, anchors: AttestationTrustAnchors?, metadata: FleetMetadata
    ) async {
        let json = wantsJSON
        let attest = self.attest
        if !json { Console.out("fleet: watching for keys (interrupt to stop)") }
        await inventory.watch { event in
            switch event {
            case .arrived(let report):
                let row = await FleetRow.judging(
                    report, metadata: metadata, policy: rules, anchors: anchors, attest: attest)
                if json {
                    guard case .object(let members) = row.json else { return }
                    Console.out(JSONValue.object([("event", "arrived")] + members).text())
                } else {
                    Console.out("arrived  " + row.summary)
                }
            case .left(let uri):
                if json {
                    Console.out(JSONValue.object([("event", "left"), ("uri", .string(uri))]).text())
                } else {
                    Console.out("left     \(uri)")
                }
            }
        }
    }
}
