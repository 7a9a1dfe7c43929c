@_exported public import OpenCombine
