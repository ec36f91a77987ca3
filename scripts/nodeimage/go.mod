module fencecheck.local/nodeimage

go 1.24.0
