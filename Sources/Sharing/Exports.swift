@_exported public import OpenCombine
@_exported public import Dependencies
