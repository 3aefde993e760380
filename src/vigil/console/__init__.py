"""The web console: server-rendered pages for the people in the loop, served by the API
function under ``/console``.

Every page is made of tool calls made as the signed-in principal, through the same path as an
MCP or REST call (validation, roles, idempotency): a person can do nothing here that an agent
with the same rights could not do over MCP. Nothing of it is imported unless a ``/console``
path is asked for, so the MCP and REST paths' cold starts do not pay for it.

``routes`` takes each request (``Console``) to a handler in ``pages``, one module per family of
pages, after ``sign_in`` has read who it is for from the cookie that ``session`` signs. A
handler calls tools and answers through ``responder``; its HTML is made of ``components``
inside ``frame``, escaped by ``html``; ``static`` serves the stylesheet, script and icon.
"""
