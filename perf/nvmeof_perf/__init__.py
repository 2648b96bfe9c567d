"""nvmeof-perf: performance-regression runs of fio jobs through the nvmeof engine."""
