"""The client's version: always the version of the agentd server it was generated for."""

__version__ = "0.2.0-dev"
