"""The analysis app's REST API: the agreement report as JSON and the
planner's "select items for humans" call (views), with the call's
serializers (serializers); their routes are in config/urls.py."""
