"""eval"""
