"""The ``vigil`` commands for the people in the loop: watch switches, sessions and requests,
steer sessions, decide requests and send messages, on the REST mirror.

``client`` calls the tools, ``profiles`` says where and with which secret, ``render`` draws the
tables (it alone imports rich), ``commands`` wires them into the ``vigil`` command. None of it
is in the Lambda artifact.
"""
