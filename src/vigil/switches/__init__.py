"""switches"""
