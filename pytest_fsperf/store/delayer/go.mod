module fsperf-delayer

go 1.22
