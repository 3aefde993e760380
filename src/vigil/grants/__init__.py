"""OAuth grants as Vigil keeps them: the clients, codes and grants of its authorization server
(vigil.oauth), and the access tokens that the calls of a grant's client carry."""
