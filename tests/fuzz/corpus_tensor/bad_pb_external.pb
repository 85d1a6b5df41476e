Bej
location/etc/passwdp