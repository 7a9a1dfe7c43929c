/// The release of SharedMirror this build belongs to, as the programs' `--version` prints it.
public enum SharedMirrorRelease {
  /// The release number.
  public static let version = "0.15.0"

  /// `0.15.0 (protocol 5)`: the release and the wire protocol version it speaks.
  public static var description: String {
    "\(version) (protocol \(BrokerMessage.protocolVersion))"
  }
}
