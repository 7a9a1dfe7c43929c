@_exported public import CasePaths
@_exported public import ConcurrencyExtras
@_exported public import Dependencies
@_exported public import IdentifiedCollections
@_exported public import OpenCombine
@_exported public import OrderedCollections
@_exported public import Sharing
