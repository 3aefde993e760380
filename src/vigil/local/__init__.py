"""The embedded local runtime: the deployed Lambda handlers, run in-process on moto.

``resources`` creates the template's AWS resources on moto, ``pump`` plays the parts that moto
does not (event source mappings, the Scheduler, asynchronous invocation), ``server`` plays the
HTTP API, and ``runtime`` starts them together for ``vigil local``.
"""
