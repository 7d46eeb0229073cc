import Testing

@testable import HIDTransport

/// The parts of a hidraw uevent the hotplug watch reads. HID_ID is written by the kernel's
/// hid-core.c as "%04X:%08X:%08X" (bus, vendor, product).
@Suite struct HIDUEventTests {
    @Test(arguments: [
        ("0003:00001050:00000407", UInt16(0x1050), UInt16(0x0407)),  // a YubiKey 5 on USB
        ("0005:0000096E:00000858", 0x096E, 0x0858),  // Bluetooth
        ("0003:00001209:0000F1D0", 0x1209, 0xF1D0),  // our uhid key
        ("0003:0001FFFF:00000001", 0xFFFF, 0x0001),  // wider than USB's 16 bits: cut
    ])
    func parsesHIDID(_ text: String, _ vendor: UInt16, _ product: UInt16) throws {
        let ids = try #require(HIDHotplugWatch.parseHIDID(text))
        #expect(ids.vendor == vendor)
        #expect(ids.product == product)
    }

    @Test(arguments: [
        "", "0003:1050", "0003:00001050:00000407:1", "0003::00000407", "0003:0000105G:00000407",
        "0003:000000001050:00000407", "0003:+1050:00000407",
    ])
    func rejectsMalformedHIDID(_ text: String) {
        #expect(HIDHotplugWatch.parseHIDID(text) == nil)
    }

    @Test(arguments: [
        ("/dev/hidraw0", true), ("/dev/hidraw123", true), ("/dev/hidraw", false), ("/dev/hidrawX", false),
        ("/dev/input/event0", false), ("/dev/hidraw0/../sda", false), ("/dev/hidraw99999999999", false),
        ("/dev/hidraw٣", false),
    ])
    func acceptsOnlyHidrawNodes(_ node: String, _ accepted: Bool) {
        #expect(HIDHotplugWatch.isHidrawNode(node) == accepted)
    }
}
