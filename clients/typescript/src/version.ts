/** The client's version: the version of the agentd server whose OpenAPI document it was generated from. */
export const VERSION = "0.2.0-dev";
