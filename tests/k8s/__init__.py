"""A one-node Kubernetes cluster for the plugin's tests, from binaries built at a pinned version."""
