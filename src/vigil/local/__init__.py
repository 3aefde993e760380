"""The embedded local runtime: the deployed Lambda handlers, run in-process on moto.

``provisioning`` creates the template's AWS resources on moto (``stack`` names the local stack
and holds the clients that reach it; ``resolver`` evaluates the template's intrinsic functions)
and records them as a ``deployment``; ``pump`` plays the parts that moto does not (event source
mappings, the Scheduler, asynchronous invocation), ``server`` plays the HTTP API, and
``runtime`` starts them together for ``vigil local``. ``dynamodb_local`` runs the DynamoDB
engine; it and moto serve only what the runtime's keys signed (``signatures``, checked by
``dynamodb_front`` and by ``moto_server``).
"""
