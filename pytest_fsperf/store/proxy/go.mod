module fsperf-store-proxy

go 1.22
