"""leases"""
