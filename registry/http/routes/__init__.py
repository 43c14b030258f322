"""The endpoints, one module per resource."""
