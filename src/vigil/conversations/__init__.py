"""conversations"""
