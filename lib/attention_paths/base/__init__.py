"""The bottom layer: configuration (every environment variable), atomic files, progress bars, BLAS threads,
the package version and the provenance recorded next to every result.  It imports nothing else of the
package, so every other layer may use it."""
