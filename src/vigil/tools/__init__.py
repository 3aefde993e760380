"""Tool families. Each module defines its tools' models and service functions once; the
catalog (vigil.catalog) serves them over MCP, REST and stdio."""
