import SecurityKeyDaemonClient

/// The D-Bus interface of securitykeyd; the introspection XML is the one committed as
/// dbus/org.securitykey.Daemon1.xml (a test checks that they are the same).
enum DaemonInterface {
    /// The well-known bus name.
    static let busName = SecurityKeyDaemonBus.busName
    /// The one object.
    static let objectPath = SecurityKeyDaemonBus.objectPath
    /// The interface.
    static let interface = SecurityKeyDaemonBus.interface

    /// Introspection XML.
    static let introspection = #"""
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <!-- securitykeyd: security keys for the applications of a session (Docs/Daemon.md).
             Bus name org.securitykey.Daemon1, object /org/securitykey/Daemon1.
             Errors: org.securitykey.Daemon1.Error.{NotAllowedError,SecurityError,AbortError,
             InvalidStateError,TypeError,NotSupportedError}, each with a one-sentence message. -->
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.securitykey.Daemon1">
            <!-- Registers a credential: options_json is a PublicKeyCredentialCreationOptionsJSON
                 (optionally wrapped as {"publicKey": ...}); returns a RegistrationResponseJSON once the
                 ceremony ends. top_origin is empty for a top-level request. StateChanged signals,
                 sent to the caller only, tell the request ID and what the request waits for. -->
            <method name="CreateCredential">
              <arg name="origin" type="s" direction="in"/>
              <arg name="top_origin" type="s" direction="in"/>
              <arg name="options_json" type="s" direction="in"/>
              <arg name="registration_response_json" type="s" direction="out"/>
            </method>
            <!-- Signs in: options_json is a PublicKeyCredentialRequestOptionsJSON; returns an
                 AuthenticationResponseJSON. -->
            <method name="GetCredential">
              <arg name="origin" type="s" direction="in"/>
              <arg name="top_origin" type="s" direction="in"/>
              <arg name="options_json" type="s" direction="in"/>
              <arg name="authentication_response_json" type="s" direction="out"/>
            </method>
            <!-- WebAuthn L3 getClientCapabilities(): capability name to boolean. -->
            <method name="GetClientCapabilities">
              <arg name="capabilities" type="a{sv}" direction="out"/>
            </method>
            <!-- Answers NEEDS_PIN for one of the caller's own requests. -->
            <method name="EnterClientPin">
              <arg name="request_id" type="s" direction="in"/>
              <arg name="pin" type="s" direction="in"/>
            </method>
            <!-- Answers SELECT_CREDENTIAL with a credential ID (base64url) from its list. -->
            <method name="SelectCredential">
              <arg name="request_id" type="s" direction="in"/>
              <arg name="credential_id" type="s" direction="in"/>
            </method>
            <!-- Cancels one of the caller's own requests; it ends with AbortError. -->
            <method name="CancelRequest">
              <arg name="request_id" type="s" direction="in"/>
            </method>
            <!-- The keys the daemon holds: uri, transport, aaguid, versions, busy. -->
            <method name="ListDevices">
              <arg name="devices" type="aa{sv}" direction="out"/>
            </method>
            <!-- A request's state, to its caller only. state: STARTED (details: call_serial t, the
                 serial of the CreateCredential/GetCredential call), WAITING, SELECTING_DEVICE (count),
                 CONNECTED (device), NEEDS_USER_PRESENCE (device), NEEDS_PIN (attempts_left, -1 when
                 unknown), NEEDS_USER_VERIFICATION (attempts_left), SELECT_CREDENTIAL (credentials:
                 JSON array of {id, userHandle, name, displayName}), COMPLETED, FAILED (error, message). -->
            <signal name="StateChanged">
              <arg name="request_id" type="s"/>
              <arg name="state" type="s"/>
              <arg name="details" type="a{sv}"/>
            </signal>
            <signal name="DeviceAdded">
              <arg name="device" type="a{sv}"/>
            </signal>
            <signal name="DeviceRemoved">
              <arg name="uri" type="s"/>
            </signal>
          </interface>
        </node>
        """#
}
