import Foundation
internal import Logging
internal import Sharing

/// How a client's connection is reported: its state, who listens, and why the broker refuses
/// it, kept under a lock of the ``ClientStorage``'s.
struct ConnectionReport {
  /// Why the last security handshake with the broker failed.
  struct HandshakeFailure: Equatable {
    var reason: String
    /// A configuration error that retrying cannot fix (a refused key, a mechanism mismatch).
    var isPermanent: Bool
  }

  var state = BrokerClient.ConnectionState.connecting
  var observers: [UUID: AsyncStream<BrokerClient.ConnectionState>.Continuation] = [:]
  var closed = false
  var handshakeFailure: HandshakeFailure?
  /// The last broker that answered it cannot reach its cluster's store, until one serves.
  var unavailableBroker: String?

  /// Whether the broker refused the handshake in a way that retrying cannot change.
  var isRefused: Bool { handshakeFailure?.isPermanent == true }
}

extension ClientStorage {
  /// The connection's new state: observers hear of it under the lock, so that a newer state
  /// cannot overtake an older one; the log line comes after.
  func setState(_ new: BrokerClient.ConnectionState) {
    let observed = withConnection { report in
      if new == .connected || new == .syncing { report.unavailableBroker = nil }
      guard report.state != new else { return false }
      report.state = new
      for observer in report.observers.values { observer.yield(new) }
      return !report.observers.isEmpty
    }
    if observed {
      logger.info("Broker connection \(new.rawValue)", metadata: ["endpoint": "\(endpoint)"])
    }
    progress.signal()
  }

  /// The broker at `endpoint` answered that it cannot reach its cluster's store.
  func brokerUnavailable(at endpoint: String) {
    let first = withConnection { report in
      defer { report.unavailableBroker = endpoint }
      return report.unavailableBroker != endpoint
    }
    if first {
      logger.warning(
        "The broker cannot reach its cluster's store (etcd)", metadata: ["endpoint": "\(endpoint)"])
    }
  }

  /// Records the outcome of a security handshake (`nil`: it succeeded). A permanent failure
  /// shows as ``BrokerClient/ConnectionState/refused`` until a handshake succeeds.
  func handshakeFailed(_ failure: ConnectionReport.HandshakeFailure?) {
    let (changed, refused) = withConnection { report in
      defer { report.handshakeFailure = failure }
      return (report.handshakeFailure != failure, report.state == .refused)
    }
    if changed, let failure {
      // A failure that may pass (a connection cut once) is not yet an error.
      logger.log(
        level: failure.isPermanent ? .error : .warning,
        "Broker handshake failed",
        metadata: ["endpoint": "\(endpoint)", "reason": "\(failure.reason)"])
    }
    if failure?.isPermanent == true {
      setState(.refused)
    } else if refused {
      setState(.connecting)
    } else {
      progress.signal()
    }
  }
}
