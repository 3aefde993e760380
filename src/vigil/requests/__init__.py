"""requests"""
